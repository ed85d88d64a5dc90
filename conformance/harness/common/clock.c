/* clock.c — monotonic seconds (clock.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "common/clock.h"

#include <time.h>

double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
