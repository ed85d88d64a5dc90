/* perf_md.h — Markdown pieces shared by `attnconf perf-compare` and `attnconf perf-report`:
 * numbers with units, the machine line, and writing the finished text.  Internal to the
 * harness; not installed.  Output is a pure function of the arguments: printf with the "C"
 * locale (the harness never calls setlocale), no clock. */
#ifndef ATTNCONF_PERF_MD_H
#define ATTNCONF_PERF_MD_H

#include <stddef.h>
#include <stdio.h>

#include "common/outfile.h"
#include "perf_json.h"

/* x with 3 significant digits and no exponent ("181", "68.7", "1.43", "0.0312"); "—" when x
 * is not finite or not positive where a rate or time is expected (callers pass those only). */
void pm_sig3(FILE *f, double x);
/* A duration in seconds as "812 ns", "43.1 µs", "12.3 ms" or "1.52 s" (3 significant digits). */
void pm_time(FILE *f, double s);
/* A p-value with 2 significant digits ("0.011", "3.0e-05"); "< 1e-15" below that, where
 * the normal approximation's tail means nothing more. */
void pm_p(FILE *f, double p);
/* "CPU MODEL, N cores, M GiB memory; limits: F GFLOP/s f32 FMA, R GB/s memory read (measured
 * by `attnconf bench --peak` | taken from FILE)", no newline; text escaped for Markdown. */
void pm_machine(FILE *f, const pj_machine *m);
/* Open --out FILE for an atomic write (common/outfile.h of_open).  Returns 0, or -1 after
 * printing "PROG: --out FILE: why" (a FILE that is not a regular file, a missing directory). */
int pm_open_out(const char *prog, const char *out, of_file *o);
/* Write buf to o and commit it (FILE replaced only now), or to stdout when o is NULL.
 * Returns CLI_EXIT_OK, or CLI_EXIT_USAGE (the commands' status for an output problem) after
 * printing "PROG: FILE: write error: reason"; o's temporary file is removed either way. */
int pm_write_out(const char *prog, of_file *o, const char *buf, size_t len);

#endif
