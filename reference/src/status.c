/* status.c — text for attnref status codes. */
#include "attnref/status.h"

const char *attnref_strerror(int status)
{
    switch (status) {
    case ATTNREF_OK: return "success";
    case ATTNREF_EINVAL: return "invalid argument";
    case ATTNREF_EDTYPE: return "dtype not allowed";
    case ATTNREF_ENOMEM: return "out of memory";
    case ATTNREF_ERANGE: return "size too large";
    default: return "unknown status";
    }
}

const char *attnref_status_name(int status)
{
    switch (status) {
    case ATTNREF_OK: return "ok";
    case ATTNREF_EINVAL: return "einval";
    case ATTNREF_EDTYPE: return "edtype";
    case ATTNREF_ENOMEM: return "enomem";
    case ATTNREF_ERANGE: return "erange";
    default: return "unknown";
    }
}
