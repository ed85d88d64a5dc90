/* probe_upward.c — compiled as a member of the results room (floor ½), it includes a header of
 * the run room (floor 1) above it: the build must refuse it (ctest harness.floors.upward). */
#include "run/run.h"
