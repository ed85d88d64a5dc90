/* sample_cases.h — in-memory cases that together use every feature of case format v2; shared by
 * the Criterion tests (test_caselib.c) and the attncase_sample tool (Python checks). */
#ifndef ATTNCONF_SAMPLE_CASES_H
#define ATTNCONF_SAMPLE_CASES_H

#include "attncase/case.h"

#define SAMPLE_COUNT 8

/* Build sample i (0 <= i < SAMPLE_COUNT); NULL on out of memory.  Free with acase_free. */
acase *sample_case(int i);

#endif
