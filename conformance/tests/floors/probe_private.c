/* probe_private.c — compiled as a member of the run room, which links the backend room, it
 * includes the backend room's private header (exec_reply.h lies beside backend/'s .c files, not
 * under backend/include/): the build must refuse it (ctest harness.floors.private). */
#include "exec_reply.h"
