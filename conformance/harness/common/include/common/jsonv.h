/* jsonv.h — JSON values the results files and the exec: protocol both write (jansson). */
#ifndef ATTNCONF_COMMON_JSONV_H
#define ATTNCONF_COMMON_JSONV_H

#include <jansson.h>

/* A JSON number for x, or the string "nan", "inf" or "-inf": JSON has no non-finite numbers
 * (json_real refuses them), and both the results files and the exec protocol carry them so.
 * Returns a new reference, or NULL when out of memory. */
json_t *jsonv_num(double x);

#endif
