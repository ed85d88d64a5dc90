/* not_supported.c — a TEST-ONLY backend that answers every sdpa call ATTNCONF_ENOTSUP while
 * listing the reference's capabilities, so every call a run makes is NOT_SUPPORTED: a run that
 * checked nothing must say so (exit 77, as `attnconf run` does), never pass.  Everything else is
 * the reference's.  The reference's entry point is renamed so this file's is the one exported.
 */
#include <stdint.h>

#define attnconf_backend_entry ns_reference_entry
#include "../../backends/reference/reference_backend.c"
#undef attnconf_backend_entry

static int ns_sdpa(void *ctx, const attnconf_sdpa_args *a)
{
    (void)a;
    return rb_fail(ctx, ATTNCONF_ENOTSUP, "not_supported serves no sdpa call (a test backend)");
}

static attnconf_backend ns_table;

__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    ns_table = *ns_reference_entry(host_abi_version);
    ns_table.name = "not_supported";
    ns_table.sdpa = ns_sdpa;
    return &ns_table;
}
