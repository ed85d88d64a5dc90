/* case_internal.h — helpers shared by the attncase sources (not installed, not public). */
#ifndef ATTNCASE_CASE_INTERNAL_H
#define ATTNCASE_CASE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attncase/case.h"

/* How PyYAML (YAML 1.1 implicit resolvers, yaml/resolver.py) types a PLAIN scalar. */
typedef enum acase_y11 {
    ACASE_Y11_STR = 0,
    ACASE_Y11_NULL,
    ACASE_Y11_BOOL,
    ACASE_Y11_INT,
    ACASE_Y11_FLOAT,
    ACASE_Y11_OTHER /* timestamp, merge '<<', value '=' */
} acase_y11;

/* The PyYAML type of the plain scalar s.  Returns -1 if the regular expressions could not be
 * compiled (out of memory). */
int acase__y11_resolve(const char *s);

/* 1 if s is [a-z0-9_]+ components joined by '.', with at least min_components components. */
int acase__dotted_valid(const char *s, int min_components);


/* "edtype" / "einval" <-> ATTNREF_EDTYPE / ATTNREF_EINVAL; NULL / 0 for anything else. */
const char *acase__error_name(int status);
int acase__error_from_name(const char *name);

/* Semantic validation of an in-memory case (everything the reader checks beyond syntax and
 * types).  Returns 0, or -1 with the dotted field path (e.g. "inputs.q.shape") in field and the
 * reason in why. */
int acase__check(const acase *c, char *field, size_t fieldlen, char *why, size_t whylen);

/* Where a semantic check reports: the dotted field path and the reason (either may be NULL). */
typedef struct acase__chk {
    char *field;
    size_t fieldlen;
    char *why;
    size_t whylen;
} acase__chk;

/* Write field and the formatted reason into k; returns -1. */
int acase__chk_fail(acase__chk *k, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 1 for the float dtypes a case can compute in (f32, f16, bf16). */
int acase__is_float_dtype(attnref_dtype dt);

/* snprintf into err when err != NULL && errlen > 0. */
void acase__errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Shortest "%.Ne" (N >= 1) text that strtod reads back as exactly d (d finite); buf >= 32. */
void acase__fmt_double_short(double d, char *buf, size_t buflen);

/* The first element (flat logical index) of a stride-0 tensor that differs from the element
 * of its stored slice it stands for, or -1 when it is constant along its stride0 dimensions. */
int64_t acase__stride0_mismatch(const acase_tensor *t);

#endif
