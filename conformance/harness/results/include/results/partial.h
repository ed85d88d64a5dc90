/* partial.h — reading back the results JSON of an interrupted run (partial.c; `run --resume`). */
#ifndef ATTNCONF_RESULTS_PARTIAL_H
#define ATTNCONF_RESULTS_PARTIAL_H

#include <stddef.h>

#include "results/result.h"

/* Read the sidecar of an interrupted run (partial.c): a JSON results document with
 * "complete": false.  Fills run's backend name and version, cases_dir, filter,
 * backend_options and results/count (malloc'd; the caller frees run->results).  Returns 0, or
 * -1 with a one-line message naming the file (and the field) in err. */
int hr_partial_load(const char *path, hr_run *run, char *err, size_t cap);

#endif
