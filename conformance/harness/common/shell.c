/* shell.c — shell quoting for the commands the harness prints to re-run something. */
#include "common/shell.h"

#include <stdio.h>
#include <string.h>

int shell_quote(const char *s, char *out, size_t n)
{
    if (n == 0)
        return -1;
    int safe = s[0] != '\0';
    for (const char *c = s; *c && safe; c++)
        safe = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
               strchr("_./:=+,@%-", *c) != NULL;
    if (safe) {
        int w = snprintf(out, n, "%s", s);
        return w >= 0 && (size_t)w < n ? 0 : -1;
    }
    size_t j = 0;
    out[j++] = '\'';
    const char *c = s;
    for (; *c && j + 5 < n; c++) {
        if (*c == '\'') {
            memcpy(out + j, "'\\''", 4);
            j += 4;
        } else {
            out[j++] = *c;
        }
    }
    int whole = !*c && j + 1 < n;
    if (j + 1 < n)
        out[j++] = '\'';
    out[j < n ? j : n - 1] = '\0';
    return whole ? 0 : -1;
}
