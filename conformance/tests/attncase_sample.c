/* attncase_sample — test helper for the Python checks (not installed).
 *
 *   attncase_sample write DIR                 write the sample cases as DIR/<id>.yaml
 *   attncase_sample gen DTYPE SEED LO HI N    print N generated elements (FORMAT.md generator),
 *                                             one bit pattern per line: 0x%08x (f32) or
 *                                             0x%04x (f16, bf16)
 *   attncase_sample load FILE...              read each file with the C reader (full
 *                                             validation); print its error and exit 1 on the
 *                                             first that fails
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/case.h"
#include "sample_cases.h"

static int cmd_write(const char *dir)
{
    for (int i = 0; i < SAMPLE_COUNT; i++) {
        acase *c = sample_case(i);
        if (!c) {
            fprintf(stderr, "sample %d: out of memory\n", i);
            return 1;
        }
        char path[4096], err[512];
        snprintf(path, sizeof path, "%s/%s.yaml", dir, c->id);
        FILE *f = fopen(path, "wb");
        if (!f) {
            perror(path);
            acase_free(c);
            return 1;
        }
        int rc = acase_write(c, f, err, sizeof err);
        if (fclose(f) != 0)
            rc = -1;
        acase_free(c);
        if (rc) {
            fprintf(stderr, "%s: %s\n", path, err);
            return 1;
        }
        printf("%s\n", path);
    }
    return 0;
}

static int cmd_gen(char **argv)
{
    acase_tensor t;
    memset(&t, 0, sizeof t);
    if (attnref_dtype_parse(argv[0], &t.dtype) != 0) {
        fprintf(stderr, "unknown dtype %s\n", argv[0]);
        return 2;
    }
    char *end;
    t.seed = strtoull(argv[1], &end, 0);
    t.lo = strtod(argv[2], NULL);
    t.hi = strtod(argv[3], NULL);
    t.present = 1;
    t.ndim = 1;
    t.shape[0] = strtoll(argv[4], NULL, 10);
    char err[256];
    if (acase_tensor_generate(&t, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (int64_t i = 0; i < t.numel; i++) {
        if (t.dtype == ATTNREF_F32) {
            uint32_t b;
            memcpy(&b, (const float *)t.data + i, 4);
            printf("0x%08x\n", (unsigned)b);
        } else {
            printf("0x%04x\n", (unsigned)((const uint16_t *)t.data)[i]);
        }
    }
    free(t.data);
    return 0;
}

static int cmd_load(int n, char **paths)
{
    for (int i = 0; i < n; i++) {
        acase *c = NULL;
        char err[1024];
        if (acase_load_file(paths[i], &c, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        printf("%s: %s\n", paths[i], c->id);
        acase_free(c);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return cmd_write(argv[2]);
    if (argc == 7 && strcmp(argv[1], "gen") == 0)
        return cmd_gen(argv + 2);
    if (argc >= 3 && strcmp(argv[1], "load") == 0)
        return cmd_load(argc - 2, argv + 2);
    fprintf(stderr, "usage: attncase_sample write DIR | gen DTYPE SEED LO HI N | load FILE...\n");
    return 2;
}
