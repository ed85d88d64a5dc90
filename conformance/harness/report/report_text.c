/* report_text.c — report text that depends on the report's data: paths shown relative to the
 * current directory, family names that may be empty. */
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* Text of the report with absolute paths under the current directory made relative (see the
 * top comment).  A match must start a token and end at '/' or the token's end, so "/a/bc" is
 * not rewritten for a cwd of "/a/b".  Returns a malloc'd string, or NULL (then print s as is). */
char *rp_relative(const rp_data *d, const char *s)
{
    size_t n = strlen(s), cl = strlen(d->cwd), o = 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        int at_token = i == 0 || strchr(" \t='\"(:,", s[i - 1]) != NULL;
        if (cl && at_token && !strncmp(s + i, d->cwd, cl) &&
            (s[i + cl] == '\0' || strchr("/ \t'\"),:;", s[i + cl]) != NULL)) {
            out[o++] = '.'; /* "." shorter than cwd (>= 2 bytes): out never outgrows n */
            i += cl;
        } else {
            out[o++] = s[i++];
        }
    }
    out[o] = '\0';
    /* A clipped message's " [... N bytes ...] " (common/clip.h) counts bytes of the elided
     * middle, which may hold the checkout's absolute path: the report says " [...] ". */
    for (char *m = strstr(out, " [... "); m; m = strstr(m + 1, " [... ")) {
        char *e = m + 6;
        while (*e >= '0' && *e <= '9')
            e++;
        if (e > m + 6 && !strncmp(e, " bytes ...] ", 12)) {
            m[5] = ']'; /* " [...]", then the text after the mark (its space included) */
            memmove(m + 6, e + 11, strlen(e + 11) + 1);
        }
    }
    return out;
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
