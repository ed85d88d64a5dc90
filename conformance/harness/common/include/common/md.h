/* md.h — Markdown (CommonMark/GFM) that cannot break a table cell or a code span, whatever the
 * string holds: `attnconf report` and the perf reports write case ids, messages and paths. */
#ifndef ATTNCONF_COMMON_MD_H
#define ATTNCONF_COMMON_MD_H

#include <stddef.h>
#include <stdio.h>

#define EM_DASH "\xE2\x80\x94"

/* Inline text with Markdown punctuation backslash-escaped (an intraword '_' kept); control
 * characters become spaces. */
void md_text(FILE *f, const char *s);
/* A code span outside a table / inside a GFM table cell ('|' written "\|"); "(empty)" for "". */
void md_code(FILE *f, const char *s);
void md_code_cell(FILE *f, const char *s);
/* The code span behind both: a fence one backtick longer than the longest run in s. */
void md_code_span(FILE *f, const char *s, int in_cell);
size_t md_longest_backtick_run(const char *s);
/* No table wider than this (conformance/tests/check_md_table_width.py, ctest
 * report.table_width): a key column and at most MD_TABLE_MAX_COLS - 1 others.  A wider one is
 * split into tables of near-equal width, each repeating the key column, rather than one that no
 * page or terminal shows whole. */
#define MD_TABLE_MAX_COLS 12

/* The number of tables n columns (beside the key column) take (1 for n = 0); part p of them
 * holds the columns of rank [*lo, *hi) = [p * n / parts, (p + 1) * n / parts). */
size_t md_table_parts(size_t n);
void md_table_part(size_t p, size_t parts, size_t n, size_t *lo, size_t *hi);

/* ch written n times. */
void md_put_repeat(FILE *f, char ch, size_t n);

#endif
