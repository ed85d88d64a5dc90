/* case_cost.c — the work estimate of one case (case_cost.h). */
#include "run/case_cost.h"

#include "attncase/cache_case.h"
#include "attncase/paged_case.h"
#include "common/shard.h"

/* An extent of a tensor's shape, or 0 when it has no such dimension. */
static uint64_t dim(const acase_tensor *t, int d)
{
    return t->present && d < t->ndim && t->shape[d] > 0 ? (uint64_t)t->shape[d] : 0;
}

static uint64_t numel(const acase_tensor *t)
{
    return t->present && t->numel > 0 ? (uint64_t)t->numel : 0;
}

/* (B*Hq*Lq) * Lk * (D + Dv): the multiply-adds of q.k and p.v over every query-key pair. */
static uint64_t attention(const acase_tensor *q, const acase_tensor *v, uint64_t lk)
{
    uint64_t rows = shard_cost_mul(shard_cost_mul(dim(q, 0), dim(q, 1)), dim(q, 2));
    return shard_cost_mul(shard_cost_mul(rows, lk), shard_cost_add(dim(q, 3), dim(v, 3)));
}

uint64_t run_case_cost(const acase *c)
{
    uint64_t w = RUN_CASE_COST_BASE;
    switch (c->op) {
    case ACASE_OP_SDPA:
        w = shard_cost_add(w, numel(&c->q));
        w = shard_cost_add(w, numel(&c->k));
        w = shard_cost_add(w, numel(&c->v));
        w = shard_cost_add(w, numel(&c->mask));
        w = shard_cost_add(w, attention(&c->q, &c->v, dim(&c->k, 2)));
        break;
    case ACASE_OP_MASK:
        w = shard_cost_add(w, c->expected.numel > 0 ? (uint64_t)c->expected.numel : 0);
        break;
    case ACASE_OP_CACHE:
        for (int64_t i = 0; c->cache && i < c->cache->nsteps; i++) {
            const acase_cache_step *s = &c->cache->steps[i];
            w = shard_cost_add(w, numel(&s->k));
            w = shard_cost_add(w, numel(&s->v));
            w = shard_cost_add(w, numel(&s->q));
            if (s->op == ACASE_CSTEP_ATTEND && s->length > 0)
                w = shard_cost_add(w, attention(&s->q, &s->v, (uint64_t)s->length));
        }
        break;
    case ACASE_OP_PAGED:
        /* The pool once, then each step's tensors; an attend step reads at most the pool's
         * slots per row, so its work is bounded by the longest row. */
        if (c->paged) {
            const acase_paged *pc = c->paged;
            w = shard_cost_add(w, numel(&pc->k_pages));
            w = shard_cost_add(w, numel(&pc->v_pages));
            const uint64_t lk = (uint64_t)(pc->table_width * pc->page_size);
            for (int64_t i = 0; i < pc->nsteps; i++) {
                const acase_paged_step *s = &pc->steps[i];
                w = shard_cost_add(w, numel(&s->k));
                w = shard_cost_add(w, numel(&s->v));
                w = shard_cost_add(w, numel(&s->q));
                if (s->op == ACASE_PSTEP_ATTEND && !s->error)
                    w = shard_cost_add(w, attention(&s->q, &pc->v_pages, lk));
            }
        }
        break;
    }
    return w;
}
