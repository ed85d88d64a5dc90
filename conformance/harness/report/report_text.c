/* report_text.c — report text that depends on the report's data: paths shown relative to the
 * current directory, family names that may be empty. */
#include <stdlib.h>
#include <string.h>

#include "common/clip.h"
#include "report_internal.h"

/* Text of the report with absolute paths under the current directory made relative (see the
 * top comment; the rule is common/clip.h's, which made a backend's error text relative when the
 * run stored it).  Returns a malloc'd string, or NULL (then print s as is). */
char *rp_relative(const rp_data *d, const char *s)
{
    return clip_relative(d->cwd, s);
}

/* A family name; the harness derives it from the case id, which could leave it empty. */
void rp_family(FILE *f, const char *s)
{
    if (*s)
        md_text(f, s);
    else
        fputs("(no family)", f);
}

void rp_code_rel(FILE *f, const rp_data *d, const char *s)
{
    char *r = rp_relative(d, s);
    md_code(f, r ? r : s);
    free(r);
}

void rp_text_rel(FILE *f, const rp_data *d, const char *s)
{
    char *r = rp_relative(d, s);
    md_text(f, r ? r : s);
    free(r);
}
