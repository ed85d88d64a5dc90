/* model.h — the parts of the case model (model.c) that only caselib uses (not installed). */
#ifndef ATTNCASE_MODEL_H
#define ATTNCASE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "attncase/case.h"

/* acase_expected_rows with the reason in why (may be NULL) when it returns -1. */
int64_t acase__expected_rows_why(const acase_expected *e, char *why, size_t whylen);

/* The first element (flat logical index) of a stride-0 tensor that differs from the element
 * of its stored slice it stands for, or -1 when it is constant along its stride0 dimensions. */
int64_t acase__stride0_mismatch(const acase_tensor *t);

#endif
