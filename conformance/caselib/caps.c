/* caps.c — capability names of `requires:` and the capabilities a case's content implies. */
#include <stdio.h>
#include <string.h>

#include "attnconf/backend.h"
#include "attncase/cache_case.h"
#include "case_internal.h"

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
    {"cache.standard", ATTNCONF_CAP_CACHE_STD},
    {"cache.rotating", ATTNCONF_CAP_CACHE_ROTATING},
    {"cache.chunked", ATTNCONF_CAP_CACHE_CHUNKED},
    {"cache.quantized", ATTNCONF_CAP_CACHE_QUANTIZED},
    {"cache.batch", ATTNCONF_CAP_CACHE_BATCH},
    {"cache.batch_rotating", ATTNCONF_CAP_CACHE_BATCH_ROTATING},
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

static uint64_t dtype_cap(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F32:
        return ATTNCONF_CAP_F32;
    case ATTNREF_F16:
        return ATTNCONF_CAP_F16;
    case ATTNREF_BF16:
        return ATTNCONF_CAP_BF16;
    default:
        return 0;
    }
}

uint64_t acase_derive_requires(const acase *c)
{
    uint64_t r = 0;
    if (!c)
        return 0;
    if (c->op == ACASE_OP_MASK) {
        r |= ATTNCONF_CAP_BUILD_MASK;
        if (c->window != 0)
            r |= ATTNCONF_CAP_WINDOW;
        if (c->lengths)
            r |= ATTNCONF_CAP_LENGTHS;
        if (c->left_padding)
            r |= ATTNCONF_CAP_LEFT_PAD;
        if (c->kv_len != 0)
            r |= ATTNCONF_CAP_KV_LEN;
        return r;
    }
    if (c->op == ACASE_OP_CACHE)
        return acase_cache_requires(c->cache);
    if (c->op != ACASE_OP_SDPA)
        return 0;
    const acase_tensor *q = &c->q, *k = &c->k, *v = &c->v, *m = &c->mask;
    /* The float dtypes of q, k and v (equal in a valid call; an error case that mixes them needs
     * every dtype it uses). */
    if (q->present)
        r |= dtype_cap(q->dtype);
    if (k->present)
        r |= dtype_cap(k->dtype);
    if (v->present)
        r |= dtype_cap(v->dtype);
    if (m->present)
        r |= m->dtype == ATTNREF_BOOL ? ATTNCONF_CAP_MASK_BOOL : ATTNCONF_CAP_MASK_ADD;
    if (c->causal)
        r |= ATTNCONF_CAP_CAUSAL;
    if (c->has_causal_offset)
        r |= ATTNCONF_CAP_CAUSAL_OFFSET;
    if (c->has_scale)
        r |= ATTNCONF_CAP_SCALE;
    if (c->window != 0)
        r |= ATTNCONF_CAP_SDPA_WINDOW;
    if (c->lengths)
        r |= ATTNCONF_CAP_SDPA_LENGTHS;
    if (c->left_padding)
        r |= ATTNCONF_CAP_SDPA_LEFT_PAD;
    if ((q->present && q->stride0) || (k->present && k->stride0) || (v->present && v->stride0))
        r |= ATTNCONF_CAP_STRIDE0;
    if ((q->present && q->layout == ACASE_LAYOUT_BLHD) ||
        (k->present && k->layout == ACASE_LAYOUT_BLHD) ||
        (v->present && v->layout == ACASE_LAYOUT_BLHD))
        r |= ATTNCONF_CAP_STRIDED;
    int qk4 = q->present && k->present && q->ndim == 4 && k->ndim == 4;
    if (qk4 && q->shape[1] != k->shape[1])
        r |= ATTNCONF_CAP_GQA;
    if (q->present && v->present && q->ndim == 4 && v->ndim == 4 && v->shape[3] != q->shape[3])
        r |= ATTNCONF_CAP_DV_NE_D;
    if (m->present) {
        /* Anything but exactly (B, Hq, Lq, Lk) is a broadcast; when q or k is not rank 4 (an
         * error case) the full shape is unknown and only a rank != 4 counts. */
        if (m->ndim != 4)
            r |= ATTNCONF_CAP_MASK_BCAST;
        else if (qk4 && (m->shape[0] != q->shape[0] || m->shape[1] != q->shape[1] ||
                         m->shape[2] != q->shape[2] || m->shape[3] != k->shape[2]))
            r |= ATTNCONF_CAP_MASK_BCAST;
    }
    return r;
}
