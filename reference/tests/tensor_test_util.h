/* tensor_test_util.h — the dense (B, H, L, D) views the reference's unit tests build. */
#ifndef TENSOR_TEST_UTIL_H
#define TENSOR_TEST_UTIL_H

#include <string.h>

#include "attnref/tensor.h"

/* A contiguous rank-4 view of data with shape (a, b, c, d), strides in elements. */
static inline attnref_tensor mk4(void *data, attnref_dtype dt, int64_t a, int64_t b, int64_t c,
                                 int64_t d)
{
    attnref_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.ndim = 4;
    const int64_t shape[4] = {a, b, c, d};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
        t.shape[i] = shape[i];
        t.strides[i] = stride;
        stride *= shape[i];
    }
    return t;
}

#endif
