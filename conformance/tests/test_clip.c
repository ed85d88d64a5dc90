/* test_clip.c — a backend's long error text cut to its head and tail (harness/common/clip.c):
 * the verdict at the end of a compiler's error must survive, the marker must say how much was
 * left out, and no cut may split a UTF-8 character. */
#define _POSIX_C_SOURCE 200809L /* getcwd */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clip.h"

static char out[CLIP_MAX + 1];

Test(clip, short_text_is_kept_whole)
{
    cr_assert_str_eq(clip_text("rejected: shapes differ", out, sizeof out),
                     "rejected: shapes differ");
    char full[CLIP_MAX + 1];
    memset(full, 'x', CLIP_MAX);
    full[CLIP_MAX] = '\0';
    cr_assert_str_eq(clip_text(full, out, sizeof out), full, "CLIP_MAX bytes stay whole");
}

Test(clip, long_text_keeps_head_marker_and_tail)
{
    static char src[5000], want[CLIP_MAX + 1];
    for (size_t i = 0; i < sizeof src - 1; i++)
        src[i] = (char)('a' + i % 26);
    src[sizeof src - 1] = '\0';
    memcpy(src, "nvcc -O3", 8);
    memcpy(src + sizeof src - 1 - 9, "verdict!!", 9);
    snprintf(want, sizeof want, "%.200s [... %d bytes ...] %s", src, 4999 - 800, src + 4999 - 600);
    cr_assert_str_eq(clip_text(src, out, sizeof out), want);
    cr_assert_eq(strncmp(out, "nvcc -O3", 8), 0);
    cr_assert_eq(strcmp(out + strlen(out) - 9, "verdict!!"), 0, "the verdict survives");
    cr_assert_leq(strlen(out), (size_t)CLIP_MAX);
    char again[CLIP_MAX + 1];
    cr_assert_str_eq(clip_text(out, again, sizeof again), out, "clipping twice changes nothing");
}

Test(clip, cuts_fall_between_characters)
{
    /* 'x', 1500 times "é" (2 bytes each), 'y': 3002 bytes, both cuts (200, 3002 - 600) fall
     * on the second byte of an "é". */
    static char src[3003];
    src[0] = 'x';
    for (size_t i = 1; i < 3001; i += 2)
        memcpy(src + i, "\xc3\xa9", 2);
    src[3001] = 'y';
    src[3002] = '\0';
    clip_text(src, out, sizeof out);
    const char *mark = strstr(out, " [... ");
    cr_assert_not_null(mark);
    size_t head = (size_t)(mark - out);
    cr_assert_eq(head, 199, "head cut back to a boundary: %zu", head);
    const char *tail = strstr(mark, "...] ") + 5;
    cr_assert_eq(((unsigned char)tail[0] & 0xC0) != 0x80, 1, "tail starts on a character");
    cr_assert_eq(strlen(tail), 599, "tail cut forward to a boundary: %zu", strlen(tail));
    unsigned long n = 0;
    cr_assert_eq(sscanf(mark, " [... %lu bytes", &n), 1);
    cr_assert_eq(head + n + strlen(tail), strlen(src), "the marker counts what is left out");
}

Test(clip, small_buffer_truncates_at_a_character)
{
    char small[6];
    cr_assert_str_eq(clip_text("ab\xc3\xa9\xc3\xa9", small, sizeof small), "ab\xc3\xa9");
    cr_assert_str_eq(clip_text("abcdefgh", small, sizeof small), "abcde");
}

Test(clip, relative_rewrites_only_whole_path_components)
{
    char *r = clip_relative("/ck/main",
                            "File \"/ck/main/venv/x.py\", line 3; cwd=/ck/main, not /ck/mainline "
                            "nor a/ck/main/y: (/ck/main)");
    cr_assert_not_null(r);
    cr_assert_str_eq(r, "File \"./venv/x.py\", line 3; cwd=., not /ck/mainline nor a/ck/main/y: "
                        "(.)");
    free(r);
    r = clip_relative("/", "/usr/lib/x.so");
    cr_assert_str_eq(r, "/usr/lib/x.so", "a cwd of / changes nothing");
    free(r);
    r = clip_relative("", "/usr/lib/x.so");
    cr_assert_str_eq(r, "/usr/lib/x.so", "an empty cwd changes nothing");
    free(r);
}

/* The same error from two checkouts at different depths (a traceback's path in its tail) is
 * stored as the same text: the cut falls at the same place and the marker counts the same. */
Test(clip, error_text_does_not_depend_on_the_checkout_path)
{
    char cwd[4096];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    static char a[8192], b[8192], ca[CLIP_MAX + 1], cb[CLIP_MAX + 1];
    char body[3000];
    memset(body, 'm', sizeof body - 1);
    body[sizeof body - 1] = '\0';
    snprintf(a, sizeof a, "Dynamo failed %s from user code: File \"%s/venv/flex.py\", line 9", body,
             cwd);
    snprintf(b, sizeof b, "Dynamo failed %s from user code: File \"./venv/flex.py\", line 9", body);
    clip_error(a, ca, sizeof ca);
    clip_text(b, cb, sizeof cb);
    cr_assert_str_eq(ca, cb);
    cr_assert_not_null(strstr(ca, "File \"./venv/flex.py\", line 9"), "%s", ca);
}
