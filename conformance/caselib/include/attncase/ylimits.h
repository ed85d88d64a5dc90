/* attncase/ylimits.h — the bounds on a YAML stream that every YAML file of the suite is read
 * within (attncase/yread.h checks them while libyaml parses, before a document tree is built;
 * cases/FORMAT.md, "Files", and SECURITY.md give the committed maxima).
 *
 * A header of its own so that attncase/case.h (the limits of case files) and attncase/yread.h
 * (the reader that enforces these) can both state them without one including the other. */
#ifndef ATTNCASE_YLIMITS_H
#define ATTNCASE_YLIMITS_H

#include <stdint.h>

#define ACASE_MAX_DEPTH 64                         /* nested sequences/mappings (committed: 4) */
#define ACASE_MAX_NODES ((int64_t)1 << 20)         /* scalars + collections (committed: 137060) */
#define ACASE_MAX_SCALAR_BYTES ((int64_t)64 << 10) /* one scalar's text (committed: 452) */

#endif
