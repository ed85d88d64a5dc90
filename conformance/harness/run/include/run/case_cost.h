/* case_cost.h — an estimate of the work one case costs, for splitting a run into balanced
 * shards (common/shard.h).  Only the ratio between cases matters; the unit is about one
 * element touched. */
#ifndef ATTNCONF_RUN_CASE_COST_H
#define ATTNCONF_RUN_CASE_COST_H

#include <stdint.h>

#include "attncase/case.h"

/* What every case costs whatever its size: loading it, a round trip to the worker, the
 * comparison's setup.  Also the cost of a case file that did not load. */
#define RUN_CASE_COST_BASE 20000u

/* RUN_CASE_COST_BASE plus the case's elements and the attention's multiply-adds: sdpa
 * B*Hq*Lq*Lk*(D+Dv) plus every input element; mask the keep mask's elements; cache, per step,
 * its inputs and each attend step's B*Hq*S*L*(D+Dv).  Saturates instead of wrapping; a pure
 * function of the case (no clock, no machine). */
uint64_t run_case_cost(const acase *c);

#endif
