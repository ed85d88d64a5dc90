/* attnref/tensor.h — strided tensor descriptor (the DLPack DLTensor convention).
 *
 * A tensor is a borrowed view: data, dtype, rank (0..4), shape, and strides counted in
 * ELEMENTS (not bytes).  Attention tensors use (B, H, L, D) order.  Strides may be any
 * non-negative values (a (B, L, H, D) buffer viewed as (B, H, L, D) simply has permuted
 * strides); a stride of 0 broadcasts.  Entries past ndim are ignored.
 */
#ifndef ATTNREF_TENSOR_H
#define ATTNREF_TENSOR_H

#include <stdint.h>

#include "attnref/dtype.h"
#include "attnref/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNREF_MAX_RANK 4

/* Upper bound on the element count of any tensor the library will index (2^31).  It keeps
 * offsets in int64 range with margin and bounds scratch allocations. */
#define ATTNREF_MAX_NUMEL ((int64_t)1 << 31)

typedef struct attnref_tensor {
    void *data;                        /* first element; may be NULL only if numel == 0 */
    attnref_dtype dtype;               /* element type */
    int32_t ndim;                      /* rank, 0..ATTNREF_MAX_RANK */
    int64_t shape[ATTNREF_MAX_RANK];   /* extent of each dimension, >= 0 */
    int64_t strides[ATTNREF_MAX_RANK]; /* elements between neighbours along each dimension */
} attnref_tensor;

/* Build a contiguous row-major descriptor over `data`.  ndim must be 0..4 and every extent
 * >= 0.  Returns ATTNREF_OK, ATTNREF_EINVAL (bad rank, negative extent, unknown dtype) or
 * ATTNREF_ERANGE (numel > ATTNREF_MAX_NUMEL). */
int attnref_tensor_init(attnref_tensor *t, void *data, attnref_dtype dt, int32_t ndim,
                        const int64_t *shape, attnref_diag *diag);

/* Product of the extents (1 for rank 0); -1 for a NULL tensor, a bad rank, a negative extent
 * or a product beyond int64. */
int64_t attnref_tensor_numel(const attnref_tensor *t);

/* Validate a descriptor: rank 0..4, extents >= 0, strides >= 0, a known dtype, data != NULL
 * when numel > 0, numel and the largest offset within ATTNREF_MAX_NUMEL.  `name` ("q", "mask",
 * ...) prefixes the diagnostic.  Returns ATTNREF_OK, ATTNREF_EINVAL or ATTNREF_ERANGE. */
int attnref_tensor_check(const attnref_tensor *t, const char *name, attnref_diag *diag);

/* Element offset (in elements) of the multi-index idx[0..ndim-1].  No validation: the tensor
 * must have passed attnref_tensor_check and idx must be in range. */
int64_t attnref_tensor_offset(const attnref_tensor *t, const int64_t *idx);

#ifdef __cplusplus
}
#endif
#endif
