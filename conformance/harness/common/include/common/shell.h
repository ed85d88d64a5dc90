/* shell.h — words a person can paste into a POSIX shell (rerun commands, reproducers). */
#ifndef ATTNCONF_COMMON_SHELL_H
#define ATTNCONF_COMMON_SHELL_H

#include <stddef.h>

/* Quote `s` for a POSIX shell into out (n bytes): unchanged if it holds only [A-Za-z0-9_./:=+,@%-]
 * and is non-empty, else single-quoted with embedded quotes escaped.  Returns 0, or -1 when it
 * did not fit (out then holds a terminated prefix, which must not be used as a command). */
int shell_quote(const char *s, char *out, size_t n);

#endif
