/* util.h — the small helpers every caselib source may use (not installed).
 *
 * A leaf of the library: it includes none of caselib's own headers and util.c calls nothing of
 * caselib, so any file can use it without making the layering circular. */
#ifndef ATTNCASE_UTIL_H
#define ATTNCASE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnref/dtype.h"

/* snprintf into err when err != NULL && errlen > 0. */
void acase__errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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

/* 1 if s is [a-z0-9_]+ components joined by '.', with at least min_components components. */
int acase__dotted_valid(const char *s, int min_components);

/* "edtype" / "einval" <-> ATTNREF_EDTYPE / ATTNREF_EINVAL; NULL / 0 for anything else. */
const char *acase__error_name(int status);
int acase__error_from_name(const char *name);

/* 1 for the float dtypes a case can compute in (f32, f16, bf16). */
int acase__is_float_dtype(attnref_dtype dt);
/* The ATTNCONF_CAP_* bit of a float dtype; 0 for any other. */
uint64_t acase__dtype_cap(attnref_dtype dt);

/* Open the case file at path for reading ("rb"): a regular file, or a symbolic link to one.
 * Anything else is refused before it is opened, with "path: reason" in err (err may be NULL):
 * "broken symbolic link: No such file or directory", "not a regular file (a FIFO): ...", or
 * strerror.  A listing names every *.yaml it finds (case.c), so this is where a FIFO or a
 * dangling link among the cases becomes an error, and never a read that blocks. */
FILE *acase__open_case_file(const char *path, char *err, size_t errlen);

/* Shortest "%.Ne" (N >= 1) text that strtod reads back as exactly d (d finite); buf >= 32. */
void acase__fmt_double_short(double d, char *buf, size_t buflen);

#endif
