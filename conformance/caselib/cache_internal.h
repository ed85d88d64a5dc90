/* cache_internal.h — what read.c, write.c and case.c share with cache_case.c (not installed).
 *
 * The cache reader uses read.c's typed-node readers (the same scalar grammar, limits and
 * "file:line:col: field: reason" errors as every other field), exported by thin wrappers at the
 * end of read.c; the cache writer emits into write.c's emitter. */
#ifndef ATTNCASE_CACHE_INTERNAL_H
#define ATTNCASE_CACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "attncase/cache_case.h"
#include "case_internal.h"

struct rd; /* read.c's reader state */

/* A key of a mapping: required flag in, value node out (as read.c's get_map). */
typedef struct acase__field {
    const char *key;
    int required;
    yaml_node_t *val;
} acase__field;

/* read.c's readers: each returns 0, or -1 with the error written (file:line:col: field: why). */
int acase__rd_fail(struct rd *r, const yaml_node_t *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int acase__rd_map(struct rd *r, yaml_node_t *n, const char *path, acase__field *spec, size_t nspec);
/* A sequence: *len its length. */
int acase__rd_seq(struct rd *r, yaml_node_t *n, const char *field, const char *what, size_t *len);
yaml_node_t *acase__rd_item(struct rd *r, const yaml_node_t *seq, size_t i);
int acase__rd_int(struct rd *r, yaml_node_t *n, const char *field, int64_t *out);
int acase__rd_double(struct rd *r, yaml_node_t *n, const char *field, double *out);
/* A sequence of 1..max_len integers, allocated into *out (*count of them). */
int acase__rd_int_list(struct rd *r, yaml_node_t *n, const char *field, int64_t max_len,
                       int64_t **out, int64_t *count);
/* Items 0..len-1 of the sequence n (len <= its length), read as integers into ints or (ints
 * NULL) floats into dbls. */
int acase__rd_items(struct rd *r, yaml_node_t *n, const char *field, size_t len, int64_t *ints,
                    double *dbls);
int acase__rd_str(struct rd *r, yaml_node_t *n, const char *field, const char **out);
int acase__rd_dtype(struct rd *r, yaml_node_t *n, const char *field, attnref_dtype *dt);
/* A tensor mapping {dtype, shape, data | generate} at field path `path`, materialised. */
int acase__rd_tensor(struct rd *r, yaml_node_t *n, const char *path, acase_tensor *t);
/* Charge numel elements about to be allocated to the file's ACASE_MAX_CASE_NUMEL budget
 * (acase__rd_tensor charges its own); -1 with the error at n/field when over it. */
int acase__rd_charge(struct rd *r, const yaml_node_t *n, const char *field, int64_t numel);

/* cache_case.c: read `params` and `steps` of an op: cache case into c->cache (allocated). */
int acase__cache_read(struct rd *r, yaml_node_t *params, yaml_node_t *steps, yaml_node_t *root,
                      acase *c);
/* cache_case.c: emit `params` and `steps` (keys and values) into the open top-level mapping.
 * Returns 0, or -1 when the emitter failed. */
int acase__cache_write(yaml_emitter_t *em, const acase *c);
/* cache_case.c: the cross-field rules of an op: cache case (acase__check's contract). */
int acase__cache_check(const acase *c, char *field, size_t fieldlen, char *why, size_t whylen);

#endif
