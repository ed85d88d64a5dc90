/* casegen — writes the golden cases (cases/) from the reference implementation.
 *
 *   casegen --out DIR     write every case to DIR/<family>/<id>.yaml and delete stale *.yaml
 *   casegen --check DIR   regenerate in memory; exit 1 if any file is missing, differs, or is
 *                         not produced by casegen any more (the committed cases must be exactly
 *                         what the committed sources generate)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "casegen.h"

static int usage(void)
{
    fputs("usage: casegen --out DIR | --check DIR\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return usage();
    cg g = {0};
    g.dir = argv[2];
    if (strcmp(argv[1], "--check") == 0)
        g.check = 1;
    else if (strcmp(argv[1], "--out") != 0)
        return usage();
    /* --check compares with what is there: a directory that is not there is a usage error, not
     * 400 "missing" cases. */
    struct stat st;
    if (g.check && (stat(g.dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "casegen --check: %s: %s\n", g.dir,
                stat(g.dir, &st) != 0 ? strerror(errno) : "not a directory");
        return 2;
    }

    fam_mask(&g);
    fam_sdpa(&g);
    fam_reports(&g);
    fam_paths(&g);
    fam_cache(&g);
    fam_params(&g);
    fam_exact(&g);
    fam_kinds(&g);
    fam_terms(&g);
    fam_edges(&g);
    fam_paged(&g);

    /* Files casegen no longer produces. */
    char **files = NULL, err[256];
    int n = acase_list_dir(g.dir, &files, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "casegen: %s\n", err);
        return 1;
    }
    size_t dlen = strlen(g.dir);
    int stale = 0;
    for (int i = 0; i < n; i++) {
        const char *rel = files[i] + dlen + (files[i][dlen] == '/');
        int known = 0;
        for (int j = 0; j < g.npaths && !known; j++)
            known = strcmp(g.paths[j], rel) == 0;
        if (!known) {
            stale++;
            if (g.check)
                fprintf(stderr, "casegen --check: %s: not produced by casegen (stale)\n", files[i]);
            else if (remove(files[i]) != 0)
                fprintf(stderr, "casegen: cannot remove stale %s\n", files[i]);
        }
        free(files[i]);
    }
    free(files);
    for (int j = 0; j < g.npaths; j++)
        free(g.paths[j]);
    free(g.paths);

    if (g.check) {
        int bad = g.mismatches + stale;
        printf("casegen --check: %d cases, %d mismatching files\n", g.count, bad);
        return bad ? 1 : 0;
    }
    printf("casegen: wrote %d cases to %s (%d stale removed)\n", g.count, g.dir, stale);
    return 0;
}
