/* clip.c — a long text cut to its head and tail (clip.h). */
#define _POSIX_C_SOURCE 200809L /* getcwd */
#include "common/clip.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 if byte b continues a UTF-8 character (10xxxxxx): a cut before it would split one. */
static int clip_continues(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

/* The largest length <= want that does not end inside a character of s[0..len). */
static size_t clip_head_len(const char *s, size_t len, size_t want)
{
    size_t h = want < len ? want : len;
    while (h > 0 && h < len && clip_continues((unsigned char)s[h]))
        h--;
    return h;
}

char *clip_text(const char *src, char *out, size_t n)
{
    if (n == 0)
        return out;
    size_t len = strlen(src);
    if (len <= CLIP_MAX) {
        size_t k = clip_head_len(src, len, n - 1);
        memcpy(out, src, k);
        out[k] = '\0';
        return out;
    }
    size_t head = clip_head_len(src, len, CLIP_HEAD);
    size_t tail_at = len - CLIP_TAIL;
    while (tail_at < len && clip_continues((unsigned char)src[tail_at]))
        tail_at++;
    char mark[CLIP_MARK_MAX + 1];
    snprintf(mark, sizeof mark, " [... %zu bytes ...] ", tail_at - head);
    size_t ml = strlen(mark), tl = len - tail_at, used = 0;
    const struct {
        const char *p;
        size_t l;
    } parts[3] = {{src, head}, {mark, ml}, {src + tail_at, tl}};
    for (int i = 0; i < 3; i++) {
        size_t room = n - 1 - used;
        size_t k = parts[i].l <= room ? parts[i].l : clip_head_len(parts[i].p, parts[i].l, room);
        memcpy(out + used, parts[i].p, k);
        used += k;
        if (k < parts[i].l)
            break;
    }
    out[used] = '\0';
    return out;
}

char *clip_relative(const char *cwd, const char *s)
{
    size_t n = strlen(s), cl = strlen(cwd), o = 0;
    if (cl == 1 && cwd[0] == '/')
        cl = 0; /* every absolute path is under "/": leave them all as they are */
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        int at_token = i == 0 || strchr(" \t='\"(:,", s[i - 1]) != NULL;
        if (cl && at_token && !strncmp(s + i, cwd, cl) &&
            (s[i + cl] == '\0' || strchr("/ \t'\"),:;", s[i + cl]) != NULL)) {
            out[o++] = '.'; /* "." is shorter than cwd (>= 2 bytes): out never outgrows n */
            i += cl;
        } else {
            out[o++] = s[i++];
        }
    }
    out[o] = '\0';
    return out;
}

char *clip_error(const char *src, char *out, size_t n)
{
    char cwd[PATH_MAX];
    char *rel = getcwd(cwd, sizeof cwd) ? clip_relative(cwd, src) : NULL;
    clip_text(rel ? rel : src, out, n);
    free(rel);
    return out;
}
