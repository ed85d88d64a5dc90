/* fuzz_caselib.c — libFuzzer target for the case reader (acase_load_mem: the bounded YAML
 * pre-scan, the document tree and every field check), built by the `fuzz` preset with clang.
 * Any input must load or fail with "name:line:col: ..." — never crash, leak, hang or read out
 * of bounds (ASan + UBSan in that preset). */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/case.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    acase *c = NULL;
    char err[512];
    err[0] = '\0';
    int rc = acase_load_mem("fuzz.yaml", data, size, &c, err, sizeof err);
    if (rc == 0) {
        if (!c)
            abort();
        /* A loaded case passes the cross-field rules again, and what the writer makes of it
         * loads back. */
        if (acase_validate(c, err, sizeof err))
            abort();
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
            abort();
        int wrc = acase_write(c, f, err, sizeof err);
        if (fclose(f) || wrc)
            abort();
        acase *back = NULL;
        if (acase_load_mem("fuzz-rewritten.yaml", text, len, &back, err, sizeof err))
            abort();
        acase_free(back);
        free(text);
        acase_free(c);
    } else if (c || strncmp(err, "fuzz.yaml", 9) != 0) {
        abort(); /* a failure leaves no case and always says where */
    }
    return 0;
}
