/* report_md.c — Markdown output helpers of `attnconf report`: text, code spans and family names
 * that stay inside one table cell, and paths shown relative to the current directory. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report_internal.h"

/* ---- Markdown helpers --------------------------------------------------------------------- */

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
    return out;
}

/* Inline text: backslash-escape Markdown punctuation (CommonMark allows it before any ASCII
 * punctuation, and GFM tables need "\|"); control characters become spaces. */
static int is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

void md_text(FILE *f, const char *s)
{
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        /* An intraword '_' (as in mutant_topleft) cannot delimit emphasis: leave it readable. */
        int intraword_ = ch == '_' && p > s && is_alnum(p[-1]) && is_alnum(p[1]);
        if (ch < 0x20 || ch == 0x7F)
            fputc(' ', f);
        else if (ch && !intraword_ && strchr("\\`*_[]<>|~&!#", ch))
            fprintf(f, "\\%c", ch);
        else
            fputc(ch, f);
    }
}

/* A family name; the harness derives it from the case id, which could leave it empty. */
void md_family(FILE *f, const char *s)
{
    if (*s)
        md_text(f, s);
    else
        fputs("(no family)", f);
}

size_t md_longest_backtick_run(const char *s)
{
    size_t best = 0, run = 0;
    for (; *s; s++) {
        run = (*s == '`') ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    return best;
}

void md_put_repeat(FILE *f, char ch, size_t n)
{
    while (n--)
        fputc(ch, f);
}

/* A code span that survives backticks in its content (CommonMark: a longer fence, and a space
 * of padding when the content starts or ends with a backtick).  In a GFM table cell
 * (`in_cell`), '|' is written "\|": GFM removes that backslash before it parses the cell, even
 * inside a code span. */
void md_code_span(FILE *f, const char *s, int in_cell)
{
    if (!*s) {
        fputs("(empty)", f);
        return;
    }
    size_t fence = md_longest_backtick_run(s) + 1;
    int pad = s[0] == '`' || s[strlen(s) - 1] == '`';
    md_put_repeat(f, '`', fence);
    if (pad)
        fputc(' ', f);
    for (; *s; s++) {
        if (*s == '|' && in_cell)
            fputs("\\|", f);
        else
            fputc(((unsigned char)*s < 0x20 || *s == 0x7F) ? ' ' : *s, f);
    }
    if (pad)
        fputc(' ', f);
    md_put_repeat(f, '`', fence);
}

void md_code(FILE *f, const char *s)
{
    md_code_span(f, s, 0);
}

void md_code_cell(FILE *f, const char *s)
{
    md_code_span(f, s, 1);
}

void md_code_rel(FILE *f, const rp_data *d, const char *s)
{
    char *r = rp_relative(d, s);
    md_code(f, r ? r : s);
    free(r);
}

void md_text_rel(FILE *f, const rp_data *d, const char *s)
{
    char *r = rp_relative(d, s);
    md_text(f, r ? r : s);
    free(r);
}
