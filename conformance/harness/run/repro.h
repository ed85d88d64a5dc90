/* repro.h — what run.c and cmd_repro.c share about `attnconf repro` (private to the run room). */
#ifndef ATTNCONF_RUN_REPRO_H
#define ATTNCONF_RUN_REPRO_H

#include <stddef.h>

/* The repro writer registered for the backend named `name` (its reported name) in the writers
 * table (conformance/repro/writers.tsv, or the file $ATTNCONF_REPRO_WRITERS names): lines
 * "NAME<TAB>SCRIPT", '#' comments and blank lines ignored; SCRIPT is a path relative to the
 * table's directory, run as "exec:PYTHON 'DIR/SCRIPT'" with PYTHON $ATTNCONF_REPRO_PYTHON, else
 * the build's Python with numpy, else python3.  Returns 1 with that backend spec in spec (n
 * bytes), 0 when none is registered (or the table cannot be read: why says so when why_n > 0),
 * -1 when it does not fit in spec. */
int repro_writer_for(const char *name, char *spec, size_t n, char *why, size_t why_n);

#endif
