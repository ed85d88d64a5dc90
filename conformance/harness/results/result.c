/* result.c — the result vocabulary: status names, which statuses are the backend's failures,
 * output format names. */
#include "results/result.h"

#include <string.h>

const char *hr_status_name(hr_status s)
{
    switch (s) {
    case HR_PASS: return "PASS";
    case HR_EXPECTED_ERROR: return "EXPECTED_ERROR";
    case HR_NOT_SUPPORTED: return "NOT_SUPPORTED";
    case HR_UNEXPRESSIBLE: return "UNEXPRESSIBLE";
    case HR_FAIL: return "FAIL";
    case HR_INCORRECT_DTYPE: return "INCORRECT_DTYPE";
    case HR_ERROR: return "ERROR";
    case HR_CRASH: return "CRASH";
    case HR_TIMEOUT: return "TIMEOUT";
    case HR_CASE_ERROR: return "CASE_ERROR";
    case HR_STATUS_COUNT: break;
    }
    /* no default: -Wswitch names a status added to the enum but not here */
    return "UNKNOWN";
}

int hr_status_is_bad(hr_status s)
{
    switch (s) {
    case HR_FAIL:
    case HR_INCORRECT_DTYPE:
    case HR_ERROR:
    case HR_CRASH:
    case HR_TIMEOUT: return 1;
    case HR_PASS:
    case HR_EXPECTED_ERROR:
    case HR_NOT_SUPPORTED:
    case HR_UNEXPRESSIBLE:
    case HR_CASE_ERROR:
    case HR_STATUS_COUNT: break;
    }
    return 0;
}

int hr_format_parse(const char *name, hr_format *out)
{
    static const struct {
        const char *name;
        hr_format fmt;
    } tab[] = {
        {"text", HR_FMT_TEXT}, {"tap", HR_FMT_TAP}, {"junit", HR_FMT_JUNIT}, {"json", HR_FMT_JSON}};
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(name, tab[i].name) == 0) {
            *out = tab[i].fmt;
            return 0;
        }
    return -1;
}
