/* plugin.c — names of the ABI status codes (backend/plugin.h). */
#include "backend/plugin.h"

const char *hb_code_name(int code)
{
    switch (code) {
    case ATTNCONF_OK: return "ok";
    case ATTNCONF_EINVAL: return "einval";
    case ATTNCONF_EDTYPE: return "edtype";
    case ATTNCONF_ENOMEM: return "enomem";
    case ATTNCONF_ENOTSUP: return "enotsup";
    case ATTNCONF_EBACKEND: return "ebackend";
    case ATTNCONF_EINEXPRESSIBLE: return "einexpressible";
    default: return "unknown";
    }
}
