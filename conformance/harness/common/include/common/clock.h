/* clock.h — the harness's one clock for deadlines and timings. */
#ifndef ATTNCONF_COMMON_CLOCK_H
#define ATTNCONF_COMMON_CLOCK_H

/* Seconds on the monotonic clock (CLOCK_MONOTONIC), from an arbitrary origin: only differences
 * and deadlines mean anything.  Never fails, never goes backwards; owns nothing. */
double mono_now(void);

#endif
