/* bad.c — a results-room file of the fixture tree that includes a room above it. */
#include "run/run.h"
