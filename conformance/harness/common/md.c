/* md.c — Markdown text and code spans that stay inside one table cell (REPORT.md and the perf
 * reports both write GFM tables from untrusted strings: case ids, messages, paths). */
#include <string.h>

#include "common/md.h"

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

size_t md_table_parts(size_t n)
{
    return n ? (n + MD_TABLE_MAX_COLS - 2) / (MD_TABLE_MAX_COLS - 1) : 1;
}

void md_table_part(size_t p, size_t parts, size_t n, size_t *lo, size_t *hi)
{
    *lo = p * n / parts;
    *hi = (p + 1) * n / parts;
}
