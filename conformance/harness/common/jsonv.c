/* jsonv.c — JSON values shared by the results writer and the exec: bridge. */
#include "common/jsonv.h"

#include <math.h>

json_t *jsonv_num(double x)
{
    if (isnan(x))
        return json_string("nan");
    if (isinf(x))
        return json_string(x > 0 ? "inf" : "-inf");
    return json_real(x);
}
