/* faults.h — TEST-ONLY deliberate faults shared by the misbehaving plugins (misbehave.c,
 * bad_abi.c), so each fault the harness must survive is written once. */
#ifndef ATTNCONF_TEST_FAULTS_H
#define ATTNCONF_TEST_FAULTS_H

#include <stddef.h>

/* Store 0x42 into p[0..n).  UBSan would report a deliberate null or out-of-bounds store
 * itself and exit before the SIGSEGV the isolation tests are about: the fault must reach the
 * worker as a signal in every build. */
__attribute__((no_sanitize("undefined"), unused)) static void tf_write(volatile unsigned char *p,
                                                                       size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = 0x42;
}

/* Recurse until the stack runs out.  A 4 KiB volatile frame live across the call: no compiler
 * can make it a loop.  Bounded (1 GiB of frames) so an unlimited stack fails the test rather
 * than eat the memory; the caller uses the result so the call cannot be dropped. */
__attribute__((noinline, unused)) static size_t tf_recurse(size_t depth)
{
    volatile unsigned char frame[4096];
    frame[0] = (unsigned char)depth;
    frame[sizeof frame - 1] = (unsigned char)depth;
    if (depth >= ((size_t)1 << 18))
        return frame[0];
    return tf_recurse(depth + 1) + frame[sizeof frame - 1];
}

#endif
