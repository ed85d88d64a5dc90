/* probe_sideways.c — compiled as a member of the bench room, it includes the report room's
 * command header, a sibling on the same floor that bench does not link: the build must refuse
 * it (ctest harness.floors.sideways). */
#include "report/cmd.h"
