/* call.h — every call the harness makes into a loaded backend's operations goes through here
 * (the place SQLite's os.c has over its VFS): a member past the table's struct_size or NULL is
 * answered ATTNCONF_ENOTSUP here instead of being called, last_error is never NULL, and the
 * timed calls (sdpa, build_mask, paged_sdpa) are timed around the member alone.  Loading, opening and
 * closing are backend_load.h's.
 *
 * Every function takes a loaded backend (backend_load.h; only be and ctx are used, so a caller
 * holding a table and a context can pass a view {.be, .ctx}) and returns the member's code
 * (ATTNCONF_OK, a negative ATTNCONF_E*, or HB_ETRANSPORT from the exec: bridge,
 * hb_transport_failure), or ATTNCONF_ENOTSUP for a member the table does not have.  The
 * arguments are the ABI's (attnconf/backend.h), passed through unchanged.
 */
#ifndef ATTNCONF_BACKEND_CALL_H
#define ATTNCONF_BACKEND_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "attnconf/backend.h"
#include "backend/backend_load.h"

/* The backend's last_error text for its context; "" when it has none (NULL). */
const char *hb_last_error(const hb_backend *b);

/* sdpa and build_mask; *seconds (may be NULL) = the wall time of the member call alone. */
int hb_sdpa(const hb_backend *b, const attnconf_sdpa_args *a, double *seconds);
int hb_build_mask(const hb_backend *b, const attnconf_mask_args *a, double *seconds);

/* The KV cache members (SPEC clauses 14-18). */
int hb_cache_create(const hb_backend *b, const attnconf_cache_config *cfg, void **cache);
int hb_cache_update(const hb_backend *b, void *cache, const attnconf_tensor *k,
                    const attnconf_tensor *v);
int hb_cache_trim(const hb_backend *b, void *cache, int64_t n, int64_t *trimmed);
int hb_cache_make_mask(const hb_backend *b, void *cache, const attnconf_cache_mask_args *a);
int hb_cache_state(const hb_backend *b, void *cache, attnconf_cache_state *st);
/* cache_destroy; NULL cache or no member: nothing. */
void hb_cache_destroy(const hb_backend *b, void *cache);
int hb_cache_filter(const hb_backend *b, void *cache, const int64_t *rows, int64_t n);
int hb_cache_extend(const hb_backend *b, void *cache, const void *other);
int hb_cache_merge(const hb_backend *b, void *const *caches, int64_t n, void **out);
int hb_cache_prepare(const hb_backend *b, void *cache, const attnconf_cache_prepare_args *a);
int hb_cache_finalize(const hb_backend *b, void *cache);

/* Device memory (seventh revision, ATTNCONF_CAP_DEVICE).  hb_is_device: 1 when b reports the
 * bit (b->caps) and its table has all six device members; the others answer ENOTSUP otherwise.
 * hb_device_info zeroes *info and sets its struct_size first.  The copies ADD their wall time
 * to *seconds (may be NULL), so a caller sums a call's copies. */
int hb_is_device(const hb_backend *b);
int hb_device_info(const hb_backend *b, attnconf_device_info *info);
int hb_device_alloc(const hb_backend *b, size_t bytes, void **handle);
void hb_device_free(const hb_backend *b, void *handle); /* NULL handle: nothing */
int hb_copy_to_device(const hb_backend *b, void *handle, size_t offset, const void *src,
                      size_t bytes, double *seconds);
int hb_copy_from_device(const hb_backend *b, void *dst, const void *handle, size_t offset,
                        size_t bytes, double *seconds);
/* sdpa, then (on a device backend) synchronize, timed together: the kernel's time.  Returns
 * sdpa's code, or synchronize's when sdpa succeeded.  On a host backend: hb_sdpa. */
int hb_sdpa_synchronized(const hb_backend *b, const attnconf_sdpa_args *a, double *seconds);
/* The paged KV members (sixth revision, SPEC clause 23); *seconds (may be NULL) = the wall time
 * of the member call alone. */
int hb_paged_append(const hb_backend *b, const attnconf_paged_append_args *a);
int hb_paged_sdpa(const hb_backend *b, const attnconf_paged_args *a, double *seconds);

/* A contiguous rank-4 view of data, shape (a, b, c, d), strides in elements, dtype an
 * attnconf_dtype: the layout every host-made tensor of a call has. */
void hb_tensor4(attnconf_tensor *t, void *data, int32_t dtype, int64_t a, int64_t b, int64_t c,
                int64_t d);

#endif
