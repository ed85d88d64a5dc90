/* test_clip.c — a backend's long error text cut to its head and tail (harness/common/clip.c):
 * the verdict at the end of a compiler's error must survive, the marker must say how much was
 * left out, and no cut may split a UTF-8 character. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

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
