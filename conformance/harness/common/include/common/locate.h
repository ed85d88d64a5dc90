/* locate.h — where the harness finds its built-in backends and golden cases by default.
 *
 * Two layouts are served by one binary:
 *   - the build tree: the executable still sits in the directory it was linked into
 *     (ATTNCONF_BUILD_EXE_DIR); backends are the build's backends/ directory and the cases the
 *     source tree's cases/ (ATTNCONF_BUILD_BACKEND_DIR, ATTNCONF_BUILD_CASES_DIR), and repro's
 *     writers table the source tree's (ATTNCONF_BUILD_REPRO_WRITERS);
 *   - an installation (`cmake --install`, any prefix, relocatable): the directories named by
 *     ATTNCONF_INSTALL_BACKEND_REL and ATTNCONF_INSTALL_CASES_REL, relative to the directory
 *     of the executable (by default ../lib/attnconf/backends and ../share/attnconf/cases from
 *     bin/).
 * The executable is found through /proc/self/exe (Linux); where that cannot be read, the
 * build-tree paths are used.  $ATTNCONF_BACKEND_PATH and --cases still take precedence (the
 * callers apply them).
 */
#ifndef ATTNCONF_LOCATE_H
#define ATTNCONF_LOCATE_H

/* The directory searched last for `--backend NAME` (NAME.so); "" if none.  Never NULL; the
 * string lives until exit. */
const char *hl_backend_dir(void);

/* The build tree's directory of test-only mutant plugins (mutant_<bug>.so, kernel_control.so),
 * searched after hl_backend_dir() so `--backend mutant_topleft` works from the build tree; ""
 * in an installation (mutants are never installed).  Never NULL; lives until exit. */
const char *hl_mutant_dir(void);

/* The cases directory used when --cases is not given.  Never NULL; lives until exit. */
const char *hl_cases_dir(void);

/* `attnconf repro`'s writers table (conformance/repro/writers.tsv) in the build tree; "" in an
 * installation: its writers serve the build tree's third-party plugins, which are never
 * installed.  Never NULL; lives until exit. */
const char *hl_repro_writers(void);

#endif
