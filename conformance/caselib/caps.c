/* caps.c — capability names of `requires:`, and the capabilities a case's content implies (its
 * op's, op.h). */
#include <stdio.h>
#include <string.h>

#include "attncase/case.h"
#include "attnconf/backend.h"
#include "op.h"

static const struct {
    const char *name;
    uint64_t bit;
} cap_table[] = {
    {"f32", ATTNCONF_CAP_F32},
    {"f16", ATTNCONF_CAP_F16},
    {"bf16", ATTNCONF_CAP_BF16},
    {"mask.bool", ATTNCONF_CAP_MASK_BOOL},
    {"mask.additive", ATTNCONF_CAP_MASK_ADD},
    {"causal", ATTNCONF_CAP_CAUSAL},
    {"causal.offset", ATTNCONF_CAP_CAUSAL_OFFSET},
    {"gqa", ATTNCONF_CAP_GQA},
    {"dv_ne_d", ATTNCONF_CAP_DV_NE_D},
    {"strided", ATTNCONF_CAP_STRIDED},
    {"scale", ATTNCONF_CAP_SCALE},
    {"mask.broadcast", ATTNCONF_CAP_MASK_BCAST},
    {"build_mask", ATTNCONF_CAP_BUILD_MASK},
    {"window", ATTNCONF_CAP_WINDOW},
    {"lengths", ATTNCONF_CAP_LENGTHS},
    {"left_padding", ATTNCONF_CAP_LEFT_PAD},
    {"sdpa.window", ATTNCONF_CAP_SDPA_WINDOW},
    {"sdpa.lengths", ATTNCONF_CAP_SDPA_LENGTHS},
    {"sdpa.left_padding", ATTNCONF_CAP_SDPA_LEFT_PAD},
    {"mask.kv_len", ATTNCONF_CAP_KV_LEN},
    {"stride0", ATTNCONF_CAP_STRIDE0},
    {"sdpa.softcap", ATTNCONF_CAP_SOFTCAP},
    {"sdpa.alibi", ATTNCONF_CAP_ALIBI},
    {"sdpa.sinks", ATTNCONF_CAP_SINKS},
    {"sdpa.chunk", ATTNCONF_CAP_CHUNK},
    {"sdpa.segments", ATTNCONF_CAP_SEGMENTS},
    {"sdpa.blocks", ATTNCONF_CAP_BLOCKS},
    {"mask.chunk", ATTNCONF_CAP_MASK_CHUNK},
    {"mask.segments", ATTNCONF_CAP_MASK_SEGMENTS},
    {"mask.blocks", ATTNCONF_CAP_MASK_BLOCKS},
    {"cache.standard", ATTNCONF_CAP_CACHE_STD},
    {"cache.rotating", ATTNCONF_CAP_CACHE_ROTATING},
    {"cache.chunked", ATTNCONF_CAP_CACHE_CHUNKED},
    {"cache.quantized", ATTNCONF_CAP_CACHE_QUANTIZED},
    {"cache.batch", ATTNCONF_CAP_CACHE_BATCH},
    {"cache.batch_rotating", ATTNCONF_CAP_CACHE_BATCH_ROTATING},
    {"paged", ATTNCONF_CAP_PAGED},
    {"device", ATTNCONF_CAP_DEVICE},
};

uint64_t acase_cap_from_name(const char *name)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof cap_table / sizeof cap_table[0]; i++)
        if (strcmp(cap_table[i].name, name) == 0)
            return cap_table[i].bit;
    return 0;
}

const char *acase_cap_name(uint64_t bit)
{
    for (size_t i = 0; i < sizeof cap_table / sizeof cap_table[0]; i++)
        if (cap_table[i].bit == bit)
            return cap_table[i].name;
    return NULL;
}

void acase_caps_text(uint64_t bits, const char *sep, char *buf, size_t n)
{
    if (n == 0)
        return;
    buf[0] = '\0';
    size_t j = 0;
    for (int bit = 0; bit < 64 && j < n; bit++) {
        uint64_t m = 1ull << bit;
        if (!(bits & m))
            continue;
        const char *name = acase_cap_name(m);
        int w = name ? snprintf(buf + j, n - j, "%s%s", j ? sep : "", name)
                     : snprintf(buf + j, n - j, "%sbit%d", j ? sep : "", bit);
        if (w < 0)
            break;
        j += (size_t)w;
    }
}

uint64_t acase_derive_requires(const acase *c)
{
    const struct acase_op_impl *op = c ? acase__op_by_id((int)c->op) : NULL;
    return op ? op->requires(c) : 0;
}
