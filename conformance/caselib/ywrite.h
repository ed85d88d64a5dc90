/* ywrite.h — the YAML emitter helpers caselib writes with (not installed): one emitter, events
 * that stop at the first failure, and scalar texts in the canonical forms of cases/FORMAT.md
 * ("Canonical form") that read back bit-exactly. */
#ifndef ATTNCASE_YWRITE_H
#define ATTNCASE_YWRITE_H

#include <stdint.h>
#include <stdio.h>

#include <yaml.h>

/* An emitter and whether anything failed so far: once an event fails the rest are dropped, so a
 * writer checks once at the end. */
typedef struct ayw {
    yaml_emitter_t em;
    int failed;
} ayw;

/* Initialise w to write f with the canonical settings (no line folding, 2-space indent, LF);
 * -1 when out of memory.  ayw_delete frees it. */
int ayw_init(ayw *w, FILE *f);
void ayw_delete(ayw *w);
/* The stream and document start / end events around the document's root. */
void ayw_begin(ayw *w);
void ayw_end(ayw *w);

/* Emit ev, initialised by a *_event_initialize call that returned ok. */
void ayw_emit(ayw *w, yaml_event_t *ev, int ok);
void ayw_scalar(ayw *w, const char *s, yaml_scalar_style_t style);
/* Plain text: keys, and numbers, booleans and names the reader knows are of the right type. */
void ayw_plain(ayw *w, const char *s);
/* A string: plain when PyYAML reads the plain form as a string, else double-quoted. */
void ayw_string(ayw *w, const char *s);
void ayw_map(ayw *w, int flow);
void ayw_map_end(ayw *w);
void ayw_seq(ayw *w, int flow);
void ayw_seq_end(ayw *w);

void ayw_int(ayw *w, int64_t v);
/* key: v */
void ayw_kint(ayw *w, const char *key, int64_t v);
/* A flow sequence of n integers; ayw_kints: key first. */
void ayw_ints(ayw *w, const int64_t *a, int64_t n);
void ayw_kints(ayw *w, const char *key, const int64_t *a, int64_t n);
/* A binary64 parameter: the shortest %.Ne (N >= 1) that reads back exactly; NaN and infinities
 * as YAML 1.1 floats (NaN sign and payload are not kept), as in every float writer here. */
void ayw_double_short(ayw *w, double d);
/* A reference value: %.16e. */
void ayw_f64(ayw *w, double d);
/* An f32 element: %.8e. */
void ayw_f32(ayw *w, float f);
/* A flow sequence of n doubles, shortest (ayw_double_short) or %.16e (ayw_f64). */
void ayw_doubles(ayw *w, const double *a, int64_t n, int shortest);

#endif
