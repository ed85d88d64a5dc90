/* mutants.h — test-only mutant backends: the reference plugin with exactly one bug switched on.
 *
 * A mutant is reference_backend.c compiled with -DATTNCONF_MUTANT=<number> (one of the RBM_*
 * constants below) and linked with mutants.c.  The plugin wrapper then calls rbm_sdpa /
 * rbm_build_mask instead of attnref_sdpa / attnref_build_mask; those wrap the (correct) attnref
 * calls with the one bug, so attnref itself never changes.  Each mutant exists to prove that a
 * family of golden cases catches a bug real implementations have had (SPEC.md clause in
 * brackets); conformance/tests/CMakeLists.txt holds one "caught" test per mutant.
 *
 * Mutants are never installed and live in ${ATTNCONF_MUTANT_DIR}, apart from real backends.
 */
#ifndef ATTNCONF_MUTANTS_H
#define ATTNCONF_MUTANTS_H

#include <stddef.h>

#include "attnref/mask.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"

/* The bugs (values of ATTNCONF_MUTANT; 0 or undefined is the real reference). */
#define RBM_TOPLEFT 1           /* causal alignment top-left, sdpa and build_mask [3] */
#define RBM_WINDOW_PLUS1 2      /* build_mask and sdpa's window parameter keep W + 1 keys [4, 19] */
#define RBM_GQA_TILE 3          /* query head h reads kv head h % Hkv [1] */
#define RBM_MASKED_ROW_MEAN_V 4 /* a fully masked row is the mean of V over all keys [9] */
#define RBM_MASKED_ROW_NAN 5    /* a fully masked row is NaN [9] */
#define RBM_UPCAST_F32                                                                             \
    6                          /* f16/bf16 q with an additive mask: computed and returned in
                                   f32, whatever the promotion rule says [8] */
#define RBM_NEG1E9 7           /* bool mask turned additive with -1e9 in the q dtype [9, 11] */
#define RBM_SCALE_DV 8         /* default scale 1/sqrt(Dv) instead of 1/sqrt(D) [2] */
#define RBM_LENGTHS_IGNORED 9  /* build_mask and sdpa ignore lengths (right padding) [5, 19] */
#define RBM_NAN_LEAK 10        /* an excluded key's NaN/inf in K or V reaches the row [10] */
#define RBM_FLOAT01_AS_BOOL 11 /* an additive mask of only 0s and 1s read as a bool mask [6] */
#define RBM_BOOL_EQ_ONE 12     /* a bool mask byte counts as true only when it is 1 [6] */
/* The flash-style kernel of kernel_mutant.c (online softmax over 16-key blocks, f32
 * accumulation, P rounded to the dtype).  RBM_KERNEL is that kernel without a bug: it must pass
 * every case; each number after it switches on one bug. */
#define RBM_KERNEL 20 /* the honest kernel (a control, not a bug) */
#define RBM_SEED_FINITE                                                                            \
    21 /* running max seeded with -5e4 instead of -inf: rows whose
                                   logits all lie below it come out 0 [12] */
#define RBM_QK_ROUND                                                                               \
    22                          /* raw q.k rounded to the input dtype before scaling (f16
                                   overflows to inf above 65504) [12, 13] */
#define RBM_KV_STRIDES 23       /* V addressed with K's strides [1] */
#define RBM_DECODE_MASK_HEAD 24 /* decode (Lq = 1) indexes a per-head mask with the kv head [7] */
#define RBM_BLOCK_SKIP                                                                             \
    25                         /* a 16-key block whose first or last key is masked is skipped
                                   although it keeps other keys [3, 4, 5] */
#define RBM_TRUNCATE_OUTPUT 26 /* output rounded toward zero instead of to nearest even [13] */
#define RBM_DENSE_KV                                                                               \
    27 /* K/V batch and head strides derived from the extents (dense
                                   blocks), ignoring stride 0 and permuted layouts [1] */
#define RBM_BLOCK_FIRST_KEY                                                                        \
    30 /* a 16-key block is processed or skipped by what its first key
                                   alone says: skipped when that key is masked although later
                                   keys are kept (a window start or left padding inside a block)
                                   [19] */
/* Terms of current models (SPEC clauses 20-22).  The kernel ones (kernel_mutant.c): */
#define RBM_SINK_VALUE 33          /* the sink given key 0's value vector [22] */
#define RBM_SINK_DROPPED_MASKED 34 /* no sink on rows masked by the finite minimum [22] */
#define RBM_SOFTCAP_AFTER_MASK 35  /* soft-capping after the mask is added [20] */
#define RBM_SOFTCAP_UNSCALED 36    /* soft-capping of the raw q.k, scaled afterwards [20] */
#define RBM_ALIBI_PROSE 37         /* slopes 2^(-b (h+1) / Hq) for every head [21] */
#define RBM_ALIBI_SIGNED 38        /* bias m (j - p) instead of -m |p - j| [21] */
#define RBM_CHUNK_ABSOLUTE 39      /* chunks counted from slot 0, not from left padding [20] */
#define RBM_NO_WIDE 43 /* f32 scores that overflow (a scale near FLT_MAX) left to give NaN [2] */
/* ... and the ones that rewrite the reference's parameters (mutants.c): */
#define RBM_SINK_SCALED 31       /* the sink multiplied by the scale [22] */
#define RBM_SINK_SOFTCAPPED 32   /* the sink soft-capped [22] */
#define RBM_BLOCK_ANY 40         /* a block's query sees the later keys of every block [20] */
#define RBM_DOC_OFF_BY_ONE 41    /* each document boundary one key early [20] */
#define RBM_MLA_DEFAULT_SCALE 42 /* the explicit scale ignored when Dv != D: 1/sqrt(D) [2] */

/* The plugin name of the mutant being compiled: "mutant_<bug>", as its CMake target (the
 * bug-free RBM_KERNEL, target mutant_kernel, is "kernel_control"), and RBM_BREAKS, the SPEC.md
 * clauses its bug breaks (the bracketed numbers above): the plugin's version string says them,
 * and `attnconf report` credits a mutant in its clause table only under those clauses. */
#if !defined(ATTNCONF_MUTANT)
#error "mutants.h is only for mutant builds: define ATTNCONF_MUTANT"
#elif ATTNCONF_MUTANT == RBM_TOPLEFT
#define RBM_NAME "mutant_topleft"
#define RBM_BREAKS "3"
#elif ATTNCONF_MUTANT == RBM_WINDOW_PLUS1
#define RBM_NAME "mutant_window_plus1"
#define RBM_BREAKS "4, 19"
#elif ATTNCONF_MUTANT == RBM_GQA_TILE
#define RBM_NAME "mutant_gqa_tile"
#define RBM_BREAKS "1"
#elif ATTNCONF_MUTANT == RBM_MASKED_ROW_MEAN_V
#define RBM_NAME "mutant_masked_row_mean_v"
#define RBM_BREAKS "9"
#elif ATTNCONF_MUTANT == RBM_MASKED_ROW_NAN
#define RBM_NAME "mutant_masked_row_nan"
#define RBM_BREAKS "9"
#elif ATTNCONF_MUTANT == RBM_UPCAST_F32
#define RBM_NAME "mutant_upcast_f32"
#define RBM_BREAKS "8"
#elif ATTNCONF_MUTANT == RBM_NEG1E9
#define RBM_NAME "mutant_neg1e9"
#define RBM_BREAKS "9, 11"
#elif ATTNCONF_MUTANT == RBM_SCALE_DV
#define RBM_NAME "mutant_scale_dv"
#define RBM_BREAKS "2"
#elif ATTNCONF_MUTANT == RBM_LENGTHS_IGNORED
#define RBM_NAME "mutant_lengths_ignored"
#define RBM_BREAKS "5, 19"
#elif ATTNCONF_MUTANT == RBM_NAN_LEAK
#define RBM_NAME "mutant_nan_leak"
#define RBM_BREAKS "10"
#elif ATTNCONF_MUTANT == RBM_FLOAT01_AS_BOOL
#define RBM_NAME "mutant_float01_as_bool"
#define RBM_BREAKS "6"
#elif ATTNCONF_MUTANT == RBM_BOOL_EQ_ONE
#define RBM_NAME "mutant_bool_eq_one"
#define RBM_BREAKS "6"
#elif ATTNCONF_MUTANT == RBM_KERNEL
/* The honest control has no bug: a name without "mutant_" puts it among the real backends of
 * REPORT.md (an independent flash-style implementation), not in the mutant table. */
#define RBM_NAME "kernel_control"
#elif ATTNCONF_MUTANT == RBM_SEED_FINITE
#define RBM_NAME "mutant_seed_finite"
#define RBM_BREAKS "12"
#elif ATTNCONF_MUTANT == RBM_QK_ROUND
#define RBM_NAME "mutant_qk_round"
#define RBM_BREAKS "12, 13"
#elif ATTNCONF_MUTANT == RBM_KV_STRIDES
#define RBM_NAME "mutant_kv_strides"
#define RBM_BREAKS "1"
#elif ATTNCONF_MUTANT == RBM_DECODE_MASK_HEAD
#define RBM_NAME "mutant_decode_mask_head"
#define RBM_BREAKS "7"
#elif ATTNCONF_MUTANT == RBM_BLOCK_SKIP
#define RBM_NAME "mutant_block_skip"
#define RBM_BREAKS "3, 4, 5"
#elif ATTNCONF_MUTANT == RBM_TRUNCATE_OUTPUT
#define RBM_NAME "mutant_truncate_output"
#define RBM_BREAKS "13"
#elif ATTNCONF_MUTANT == RBM_DENSE_KV
#define RBM_NAME "mutant_dense_kv"
#define RBM_BREAKS "1"
#elif ATTNCONF_MUTANT == RBM_BLOCK_FIRST_KEY
#define RBM_NAME "mutant_block_first_key"
#define RBM_BREAKS "19"
#elif ATTNCONF_MUTANT == RBM_SINK_SCALED
#define RBM_NAME "mutant_sink_scaled"
#define RBM_BREAKS "22"
#elif ATTNCONF_MUTANT == RBM_SINK_SOFTCAPPED
#define RBM_NAME "mutant_sink_softcapped"
#define RBM_BREAKS "22"
#elif ATTNCONF_MUTANT == RBM_SINK_VALUE
#define RBM_NAME "mutant_sink_value"
#define RBM_BREAKS "22"
#elif ATTNCONF_MUTANT == RBM_SINK_DROPPED_MASKED
#define RBM_NAME "mutant_sink_dropped_masked"
#define RBM_BREAKS "22"
#elif ATTNCONF_MUTANT == RBM_SOFTCAP_AFTER_MASK
#define RBM_NAME "mutant_softcap_after_mask"
#define RBM_BREAKS "20"
#elif ATTNCONF_MUTANT == RBM_SOFTCAP_UNSCALED
#define RBM_NAME "mutant_softcap_unscaled"
#define RBM_BREAKS "20"
#elif ATTNCONF_MUTANT == RBM_ALIBI_PROSE
#define RBM_NAME "mutant_alibi_prose"
#define RBM_BREAKS "21"
#elif ATTNCONF_MUTANT == RBM_ALIBI_SIGNED
#define RBM_NAME "mutant_alibi_signed"
#define RBM_BREAKS "21"
#elif ATTNCONF_MUTANT == RBM_CHUNK_ABSOLUTE
#define RBM_NAME "mutant_chunk_absolute"
#define RBM_BREAKS "20"
#elif ATTNCONF_MUTANT == RBM_BLOCK_ANY
#define RBM_NAME "mutant_block_any"
#define RBM_BREAKS "20"
#elif ATTNCONF_MUTANT == RBM_DOC_OFF_BY_ONE
#define RBM_NAME "mutant_doc_off_by_one"
#define RBM_BREAKS "20"
#elif ATTNCONF_MUTANT == RBM_NO_WIDE
#define RBM_NAME "mutant_no_wide"
#define RBM_BREAKS "2"
#elif ATTNCONF_MUTANT == RBM_MLA_DEFAULT_SCALE
#define RBM_NAME "mutant_mla_default_scale"
#define RBM_BREAKS "2"
#else
#error "unknown ATTNCONF_MUTANT (see the RBM_* constants in mutants.h)"
#endif

/* attnref_sdpa with the mutant's bug (attnref_sdpa itself for a bug that is not in sdpa).
 * Arguments are what the plugin wrapper would pass to attnref_sdpa; params is never NULL and
 * out_capacity is the host's byte count at out->data (the wrapper has already checked it for
 * q-dtype elements).  Returns an attnref status.  A mutant may change out->dtype (the upcast
 * mutant does); the wrapper reports it to the host. */
int rbm_sdpa(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
             const attnref_tensor *mask, const attnref_sdpa_params *params, attnref_tensor *out,
             size_t out_capacity, attnref_diag *diag);

/* The flash-style kernel (kernel_mutant.c) with bug `bug` (RBM_KERNEL: none) on arguments that
 * attnref_sdpa has already accepted; writes out in out->dtype (the q dtype).  Returns
 * ATTNREF_OK or ATTNREF_ENOMEM. */
int km_sdpa(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
            const attnref_tensor *mask, const attnref_sdpa_params *p, attnref_tensor *out, int bug,
            attnref_diag *diag);

/* attnref_build_mask with the mutant's bug (or unchanged).  Returns an attnref status. */
int rbm_build_mask(const attnref_mask_params *params, attnref_tensor *keep, attnref_diag *diag);

#endif
