/* test_exec_reply.c — the exec: reply parser (harness/backend/exec_reply.c).  An adapter is untrusted:
 * every way a header can break PROTOCOL.md must be refused with a message naming what is wrong,
 * before the bridge reads a payload byte or believes a size; and an honest header must yield
 * exactly what it says. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "exec_reply.h"

static xr_reply parse_ok(const char *line, const char *op, const char *want)
{
    xr_reply r;
    char why[768] = "";
    int rc = xr_parse(line, strlen(line), op, want, &r, why, sizeof why);
    cr_assert_eq(rc, 0, "refused: %s\n  header: %s", why, line);
    return r;
}

/* ---- refusals: one table row per rule ---------------------------------------------------- */

typedef struct {
    const char *line, *op, *want, *message;
} refusal;

static const refusal refusals[] = {
    {"", "sdpa", "out", "header to sdpa is not a JSON object ("},
    {"hello world", "hello", NULL,
     "near 'hello'): 'hello world' (stdout must carry only the protocol"},
    {"[1]", "sdpa", "out", "header to sdpa is not a JSON object (not an object): '[1]'"},
    {"{\"protocol\":1,\"status\":0,\"status\":0}", "hello", NULL, "duplicate object key"},
    {"{\"status\":0}", "sdpa", "out", "header to sdpa lacks \"protocol\": 1"},
    {"{\"protocol\":2,\"status\":0}", "sdpa", "out", "header to sdpa lacks \"protocol\": 1"},
    {"{\"protocol\":1,\"status\":1}", "sdpa", "out", "\"status\" is not an integer in -6..0"},
    {"{\"protocol\":1,\"status\":-7}", "sdpa", "out", "\"status\" is not an integer in -6..0"},
    {"{\"protocol\":1,\"status\":\"0\"}", "sdpa", "out", "\"status\" is not an integer in -6..0"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":{}}", "sdpa", "out", "\"tensors\" is not an array"},
    {"{\"protocol\":1,\"status\":-2}", "sdpa", "out",
     "status -2 to sdpa without an \"error\" string"},
    {"{\"protocol\":1,\"status\":-2,\"error\":\"x\",\"tensors\":[{}]}", "sdpa", "out",
     "status -2 to sdpa with tensors (an error reply has none)"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{}]}", "cache_trim", NULL,
     "reply to cache_trim lists tensors; it has none"},
    {"{\"protocol\":1,\"status\":0}", "sdpa", "out",
     "success reply to sdpa lists 0 tensors, expected one ('out')"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"dtype\":\"f32\"}]}", "sdpa", "out",
     "a tensor without a \"name\" string"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"keep\"}]}", "sdpa", "out",
     "tensor 'keep', expected 'out'"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f64\"}]}", "sdpa",
     "out", "tensor 'out': dtype 'f64' is not f32, f16, bf16 or bool"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[1,1,1,1,1]}]}",
     "sdpa", "out", "tensor 'out': \"shape\" is not an array of at most 4 integers"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[1,-1]}]}",
     "sdpa", "out", "tensor 'out': shape[1] is not a non-negative integer"},
    /* 2^32 * 2^32 elements: refused before any multiplication can overflow */
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[4294967296,4294967296],\"nbytes\":0}]}",
     "sdpa", "out",
     "tensor 'out': shape (4294967296,4294967296) has more than 17179869184 elements"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f16\","
     "\"shape\":[2,3],\"nbytes\":24}]}",
     "sdpa", "out", "tensor 'out': nbytes 24 does not match f16 (2,3) (12 bytes)"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f16\","
     "\"shape\":[2,3]}]}",
     "sdpa", "out", "tensor 'out': \"nbytes\" is missing or not an integer"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[2,3],\"nbytes\":24,\"strides\":[3]}]}",
     "sdpa", "out", "tensor 'out': \"strides\" is not an array of 2 integers"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[2,3],\"nbytes\":24,\"strides\":[3,-1]}]}",
     "sdpa", "out", "tensor 'out': strides[1] is not an integer in 0..17179869184"},
    /* row stride 4 over a (2,3) buffer of 6: the last element would be read from index 6 */
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[2,3],\"nbytes\":24,\"strides\":[4,1]}]}",
     "sdpa", "out", "tensor 'out': strides address element 6 of a (2,3) buffer of 6"},
    /* inside the buffer, yet not each element once: the dense payload would be misread */
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[1,2,1,8],\"nbytes\":64,\"strides\":[0,0,0,0]}]}",
     "sdpa", "out",
     "tensor 'out': strides [0,0,0,0] are not the dense strides [16,8,8,1] of shape (1,2,1,8), "
     "nor a permutation of its axes"},
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":\"f32\","
     "\"shape\":[1,2,1,8],\"nbytes\":64,\"strides\":[1000000,1,1,1]}]}",
     "sdpa", "out",
     "tensor 'out': strides [1000000,1,1,1] are not the dense strides [16,8,8,1] of shape "
     "(1,2,1,8), nor a permutation of its axes"},
    /* [2,0] over (2,2) reads elements 0, 0, 2, 2: two twice, two never */
    {"{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"keep\",\"dtype\":\"bool\","
     "\"shape\":[2,2],\"nbytes\":4,\"strides\":[2,0]}]}",
     "build_mask", "keep",
     "tensor 'keep': strides [2,0] are not the dense strides [2,1] of shape (2,2)"},
};

Test(exec_reply, refused)
{
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const refusal *t = &refusals[i];
        xr_reply r;
        char why[768] = "";
        int rc = xr_parse(t->line, strlen(t->line), t->op, t->want, &r, why, sizeof why);
        json_decref(r.root);
        cr_expect_eq(rc, -1, "row %zu accepted: %s", i, t->line);
        cr_expect(strstr(why, t->message), "row %zu: message '%s'\n  lacks '%s'", i, why,
                  t->message);
        cr_expect_eq(r.has_tensor, 0, "row %zu", i);
    }
}

Test(exec_reply, long_garbage_is_quoted_cut_with_control_characters_blanked)
{
    char line[200];
    memset(line, 'x', sizeof line);
    line[0] = '\t';
    xr_reply r;
    char why[768];
    cr_assert_eq(xr_parse(line, sizeof line, "sdpa", "out", &r, why, sizeof why), -1);
    cr_assert(strstr(why, ": ' xxxxxxxxx"), "%s", why);
    cr_assert(strstr(why, "xxx...' (stdout must carry only the protocol; log to stderr)"), "%s",
              why);
}

/* ---- what an accepted header yields ----------------------------------------------------- */

Test(exec_reply, error_reply_carries_status_and_text)
{
    xr_reply r = parse_ok("{\"protocol\":1,\"status\":-2,\"error\":\"mask dtype f32 does not "
                          "promote to f16\"}",
                          "sdpa", "out");
    cr_assert_eq(r.status, -2);
    cr_assert_str_eq(r.error, "mask dtype f32 does not promote to f16");
    cr_assert_eq(r.has_tensor, 0);
    json_decref(r.root);
}

Test(exec_reply, einexpressible_is_a_status)
{
    xr_reply r = parse_ok("{\"protocol\":1,\"status\":-6,\"error\":\"lengths [5, -1]: a 0/1 "
                          "attention_mask cannot hold -1\"}",
                          "build_mask", "keep");
    cr_assert_eq(r.status, ATTNCONF_EINEXPRESSIBLE);
    cr_assert_str_eq(r.error, "lengths [5, -1]: a 0/1 attention_mask cannot hold -1");
    json_decref(r.root);
}

Test(exec_reply, tensor_without_strides_is_row_major)
{
    xr_reply r = parse_ok("{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":"
                          "\"bf16\",\"shape\":[2,0,3,5],\"nbytes\":0}]}",
                          "sdpa", "out");
    cr_assert_eq(r.status, 0);
    cr_assert_eq(r.has_tensor, 1);
    cr_assert_eq(r.desc.dtype, ATTNCONF_BF16);
    cr_assert_eq(r.desc.ndim, 4);
    cr_assert_eq(r.desc.nbytes, 0);
    /* an empty extent counts as 1 in the strides, so they stay meaningful */
    int64_t want[4] = {15, 15, 5, 1};
    for (int d = 0; d < 4; d++)
        cr_assert_eq(r.desc.strides[d], want[d], "strides[%d] = %lld", d,
                     (long long)r.desc.strides[d]);
    json_decref(r.root);
}

Test(exec_reply, permuted_and_broadcast_strides_inside_the_buffer)
{
    xr_reply r = parse_ok("{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"keep\",\"dtype\":"
                          "\"bool\",\"shape\":[4,1,3,4],\"strides\":[1,0,16,4],\"nbytes\":48}]}",
                          "build_mask", "keep");
    cr_assert_eq(r.desc.dtype, ATTNCONF_BOOL);
    cr_assert_eq(r.desc.nbytes, 48);
    cr_assert_eq(r.desc.strides[0], 1);
    cr_assert_eq(r.desc.strides[1], 0);
    cr_assert_eq(r.desc.strides[2], 16);
    json_decref(r.root);
}

Test(exec_reply, rank0_tensor_is_one_element)
{
    xr_reply r = parse_ok("{\"protocol\":1,\"status\":0,\"tensors\":[{\"name\":\"out\",\"dtype\":"
                          "\"f32\",\"shape\":[],\"nbytes\":4}]}",
                          "sdpa", "out");
    cr_assert_eq(r.desc.ndim, 0);
    cr_assert_eq(r.desc.nbytes, 4);
    json_decref(r.root);
}

Test(exec_reply, hello)
{
    xr_reply r = parse_ok("{\"protocol\": 1, \"status\": 0, \"name\": \"mlx-lm\", \"version\": "
                          "\"mlx-lm 0.32.2\", \"capabilities\": [\"f32\", \"bf16\", "
                          "\"build_mask\"], \"options\": [{\"key\": \"device\", \"default\": "
                          "\"cpu\"}]}",
                          "hello", NULL);
    xr_hello h;
    char why[768];
    cr_assert_eq(xr_hello_take(r.root, &h, why, sizeof why), 0, "%s", why);
    cr_assert_str_eq(h.name, "mlx-lm");
    cr_assert_str_eq(h.version, "mlx-lm 0.32.2");
    cr_assert_eq(h.caps, ATTNCONF_CAP_F32 | ATTNCONF_CAP_BF16 | ATTNCONF_CAP_BUILD_MASK);
    cr_assert_eq(h.stride0_wire, 0);
    cr_assert_eq(h.noptions, 1);
    json_decref(r.root);
}

/* stride0.wire is the protocol's own capability: no case bit, a flag of its own. */
Test(exec_reply, hello_stride0_wire)
{
    xr_reply r = parse_ok("{\"protocol\": 1, \"status\": 0, \"name\": \"x\", \"version\": \"1\", "
                          "\"capabilities\": [\"f32\", \"stride0\", \"stride0.wire\"]}",
                          "hello", NULL);
    xr_hello h;
    char why[768];
    cr_assert_eq(xr_hello_take(r.root, &h, why, sizeof why), 0, "%s", why);
    cr_assert_eq(h.caps, ATTNCONF_CAP_F32 | ATTNCONF_CAP_STRIDE0);
    cr_assert_eq(h.stride0_wire, 1);
    json_decref(r.root);
}

typedef struct {
    const char *line, *message;
} hello_refusal;

static const hello_refusal hello_refusals[] = {
    {"{\"version\":\"1\",\"capabilities\":[]}", "\"name\" (missing) is not [a-z0-9_-]{1,64}"},
    {"{\"name\":\"MLX\",\"version\":\"1\",\"capabilities\":[]}", "\"name\" 'MLX' is not"},
    {"{\"name\":\"\",\"version\":\"1\",\"capabilities\":[]}", "\"name\" '' is not"},
    {"{\"name\":\"a\",\"capabilities\":[]}", "\"version\" is missing or not a string"},
    {"{\"name\":\"a\",\"version\":\"1\"}", "\"capabilities\" is missing or not an array"},
    {"{\"name\":\"a\",\"version\":\"1\",\"capabilities\":[\"f64\"]}",
     "unknown capability 'f64' (known: f32, f16, bf16"},
    /* Device memory has no wire form (PROTOCOL.md): an adapter owns its device. */
    {"{\"name\":\"a\",\"version\":\"1\",\"capabilities\":[\"f32\",\"device\"]}",
     "capability 'device' is not one an exec: adapter can list"},
    {"{\"name\":\"a\",\"version\":\"1\",\"capabilities\":[\"f64\"]}", ", stride0.wire)"},
    {"{\"name\":\"a\",\"version\":\"1\",\"capabilities\":[7]}",
     "unknown capability (not a string)"},
    {"{\"name\":\"a\",\"version\":\"1\",\"capabilities\":[],\"options\":{}}",
     "\"options\" is not an array"},
    {"{\"name\":\"a\",\"version\":\"1\",\"capabilities\":[],\"options\":[{\"key\":\"Dev\"}]}",
     "options[0] has no \"key\" of the form [a-z0-9_.-]+"},
};

Test(exec_reply, hello_refused)
{
    for (size_t i = 0; i < sizeof hello_refusals / sizeof hello_refusals[0]; i++) {
        const hello_refusal *t = &hello_refusals[i];
        json_t *root = json_loads(t->line, 0, NULL);
        cr_assert(root, "row %zu", i);
        xr_hello h;
        char why[768] = "";
        int rc = xr_hello_take(root, &h, why, sizeof why);
        json_decref(root);
        cr_expect_eq(rc, -1, "row %zu accepted", i);
        cr_expect(strstr(why, t->message), "row %zu: message '%s'\n  lacks '%s'", i, why,
                  t->message);
    }
}

Test(exec_reply, hello_with_too_many_options)
{
    json_t *root = json_pack("{s:s, s:s, s:[]}", "name", "a", "version", "1", "capabilities");
    json_t *opts = json_array();
    for (int i = 0; i <= XR_MAX_OPTIONS; i++)
        json_array_append_new(opts, json_pack("{s:s}", "key", "k"));
    json_object_set_new(root, "options", opts);
    xr_hello h;
    char why[768];
    cr_assert_eq(xr_hello_take(root, &h, why, sizeof why), -1);
    cr_assert_str_eq(why, "hello: more than 256 options");
    json_decref(root);
}

Test(exec_reply, seconds)
{
    char why[768];
    double s = 0;
    json_t *r = json_loads("{\"seconds\": 0.25}", 0, NULL);
    cr_assert_eq(xr_seconds(r, 0.5, &s, why, sizeof why), 0);
    cr_assert_eq(s, 0.25);
    json_decref(r);
    /* absent: -1, not an error */
    r = json_loads("{}", 0, NULL);
    cr_assert_eq(xr_seconds(r, 0.5, &s, why, sizeof why), 0);
    cr_assert_eq(s, -1);
    json_decref(r);
    /* within the slack (1 % + 1 ms) of the exchange, and just past it */
    r = json_loads("{\"seconds\": 1.0109}", 0, NULL);
    cr_assert_eq(xr_seconds(r, 1.0, &s, why, sizeof why), 0);
    json_decref(r);
    r = json_loads("{\"seconds\": 1.0111}", 0, NULL);
    cr_assert_eq(xr_seconds(r, 1.0, &s, why, sizeof why), -1);
    cr_assert(strstr(why, "\"seconds\" 1.0111 is longer than the whole exchange took (1 s)"), "%s",
              why);
    json_decref(r);
    r = json_loads("{\"seconds\": -0.5}", 0, NULL);
    cr_assert_eq(xr_seconds(r, 1.0, &s, why, sizeof why), -1);
    cr_assert(strstr(why, "-0.5 is not a finite number >= 0"), "%s", why);
    json_decref(r);
    r = json_loads("{\"seconds\": \"0.1\"}", 0, NULL);
    cr_assert_eq(xr_seconds(r, 1.0, &s, why, sizeof why), -1);
    cr_assert(strstr(why, "\"seconds\" is a string, not a number of seconds"), "%s", why);
    json_decref(r);
}

Test(exec_reply, cache_id_and_integers)
{
    char why[768];
    json_int_t v = 0;
    json_t *r = json_loads("{\"cache\": 7, \"trimmed\": 3}", 0, NULL);
    cr_assert_eq(xr_cache_id(r, "cache_create", &v, why, sizeof why), 0);
    cr_assert_eq(v, 7);
    cr_assert_eq(xr_int(r, "cache_trim", "trimmed", &v, why, sizeof why), 0);
    cr_assert_eq(v, 3);
    cr_assert_eq(xr_int(r, "cache_trim", "n", &v, why, sizeof why), -1);
    cr_assert_str_eq(why, "reply to cache_trim lacks the integer \"n\"");
    json_decref(r);
    r = json_loads("{\"cache\": 1099511627777}", 0, NULL);
    cr_assert_eq(xr_cache_id(r, "cache_merge", &v, why, sizeof why), -1);
    cr_assert_str_eq(why, "reply to cache_merge: cache id 1099511627777 out of range");
    json_decref(r);
}

Test(exec_reply, cache_state)
{
    char why[768];
    json_t *r = json_loads("{\"batch\":2,\"length\":3,\"offsets\":[3,2],"
                           "\"positions\":[[0,1,2],[-1,0,1]]}",
                           0, NULL);
    int64_t b = 0, l = 0, off[2], pos[6];
    cr_assert_eq(xr_state_sizes(r, 64, 4096, &b, &l, why, sizeof why), 0);
    cr_assert_eq(b, 2);
    cr_assert_eq(l, 3);
    cr_assert_eq(xr_state_rows(r, b, l, off, pos, why, sizeof why), 0);
    cr_assert_eq(off[0], 3);
    cr_assert_eq(off[1], 2);
    int64_t want[6] = {0, 1, 2, -1, 0, 1};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(pos[i], want[i]);
    cr_assert_eq(xr_state_sizes(r, 1, 4096, &b, &l, why, sizeof why), -1);
    cr_assert_str_eq(why, "reply to cache_state: batch 2 / length 3 out of range");
    json_decref(r);
    /* a ragged row is refused, and nothing is written past the sizes */
    r = json_loads("{\"offsets\":[0,0],\"positions\":[[0,1,2],[0,1,2,3]]}", 0, NULL);
    int64_t guard[7] = {9, 9, 9, 9, 9, 9, 42};
    cr_assert_eq(xr_state_rows(r, 2, 3, off, guard, why, sizeof why), -1);
    cr_assert_eq(guard[6], 42);
    cr_assert(strstr(why, "are not 2 integers / 2 rows of 3 integers"), "%s", why);
    json_decref(r);
}

/* ---- paged_append replies (PROTOCOL.md "paged_append"): writes checked whole ---------------- */

static const xr_pool paged_pool = {5, 3, 2, 4, 2, ATTNCONF_F32};

/* Parse a paged_append reply with m rows in k_slots / v_slots (dtype dt) and check its writes;
 * returns xr_paged_writes's answer with why. */
static int paged_reply(const char *writes, int m, const char *dt, int dk, char *why, size_t n,
                       int64_t *pairs, int64_t *count)
{
    char line[1024];
    size_t es = strcmp(dt, "f32") == 0 ? 4 : 2;
    snprintf(line, sizeof line,
             "{\"protocol\":1,\"status\":0,\"writes\":%s,\"tensors\":[{\"name\":\"k_slots\","
             "\"dtype\":\"%s\",\"shape\":[%d,2,%d],\"nbytes\":%zu},{\"name\":\"v_slots\","
             "\"dtype\":\"%s\",\"shape\":[%d,2,2],\"nbytes\":%zu}]}",
             writes, dt, m, dk, (size_t)(m * 2 * dk) * es, dt, m, (size_t)(m * 4) * es);
    xr_reply r;
    static const char *const want[2] = {"k_slots", "v_slots"};
    cr_assert_eq(xr_parse_n(line, strlen(line), "paged_append", want, 2, &r, why, n), 0, "%s", why);
    cr_assert_eq(r.ntensors, 2);
    unsigned char seen[15];
    int rc = xr_paged_writes(r.root, &paged_pool, r.descs, pairs, seen, count, why, n);
    json_decref(r.root);
    return rc;
}

Test(exec_reply, paged_writes_accepted)
{
    char why[768] = "";
    int64_t pairs[30], m = -1;
    cr_assert_eq(paged_reply("[[4,2],[0,0]]", 2, "f32", 4, why, sizeof why, pairs, &m), 0, "%s",
                 why);
    cr_assert_eq(m, 2);
    cr_assert(pairs[0] == 4 && pairs[1] == 2 && pairs[2] == 0 && pairs[3] == 0);
    cr_assert_eq(paged_reply("[]", 0, "f32", 4, why, sizeof why, pairs, &m), 0, "%s", why);
    cr_assert_eq(m, 0);
}

Test(exec_reply, paged_writes_refused)
{
    static const struct {
        const char *writes;
        int m, dk;
        const char *dt, *message;
    } rows[] = {
        {"[[5,0]]", 1, 4, "f32", "writes[0] = [5, 0] is outside the pool (5 pages of 3 slots)"},
        {"[[0,3]]", 1, 4, "f32", "writes[0] = [0, 3] is outside the pool"},
        {"[[0,-1]]", 1, 4, "f32", "is outside the pool"},
        {"[[1,1],[1,1]]", 2, 4, "f32", "[1, 1] is written twice"},
        {"[[1,1,0]]", 1, 4, "f32", "writes[0] is not [page, slot]"},
        {"[1]", 1, 4, "f32", "writes[0] is not [page, slot]"},
        {"{}", 0, 4, "f32", "lacks the list \"writes\""},
        {"[[1,1]]", 2, 4, "f32", "k_slots is f32 (2,2,4), expected f32 (1,2,4)"},
        {"[[1,1]]", 1, 3, "f32", "k_slots is f32 (1,2,3), expected f32 (1,2,4)"},
        {"[[1,1]]", 1, 4, "f16", "k_slots is f16 (1,2,4), expected f32 (1,2,4)"},
        {"[[0,0],[0,1],[0,2],[1,0],[1,1],[1,2],[2,0],[2,1],[2,2],[3,0],[3,1],[3,2],[4,0],[4,1],"
         "[4,2],[0,0]]",
         16, 4, "f32", "16 writes, more than the pool's 15 slots"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char why[768] = "";
        int64_t pairs[32], m = -1;
        cr_expect_eq(paged_reply(rows[i].writes, rows[i].m, rows[i].dt, rows[i].dk, why, sizeof why,
                                 pairs, &m),
                     -1, "row %zu accepted", i);
        cr_expect(strstr(why, rows[i].message) != NULL, "row %zu: '%s' lacks '%s'", i, why,
                  rows[i].message);
    }
}

Test(exec_reply, two_tensors_counted)
{
    char why[768] = "";
    xr_reply r;
    static const char *const want[2] = {"k_slots", "v_slots"};
    const char *line = "{\"protocol\":1,\"status\":0,\"writes\":[],\"tensors\":[{\"name\":"
                       "\"k_slots\",\"dtype\":\"f32\",\"shape\":[0,2,4],\"nbytes\":0}]}";
    cr_assert_eq(xr_parse_n(line, strlen(line), "paged_append", want, 2, &r, why, sizeof why), -1);
    cr_expect(strstr(why, "lists 1 tensors, expected 2 ('k_slots', 'v_slots')") != NULL, "%s", why);
    json_decref(r.root);
}
