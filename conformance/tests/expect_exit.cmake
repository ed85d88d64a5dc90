# expect_exit.cmake — run a command and check its exit status and output (CLI tests).
#
#   cmake -D CMD="prog|arg1|arg2" -D EXPECT_RC=2 [-D EXPECT_REGEX=re] [-D FORBID_REGEX=re]
#         [-D BAD_CASES_DIR=dir [-D COPY_CASES_FROM=dir]] -P expect_exit.cmake
#
# CMD is '|'-separated because ';' does not survive add_test.  EXPECT_REGEX / FORBID_REGEX are
# matched against stdout + stderr (a crash message must never appear).  BAD_CASES_DIR, if set,
# is (re)created before the run with a malformed case file, broken.yaml, plus (optional) one
# valid case copied from COPY_CASES_FROM, so the harness can be tested on a bad input without
# committing a broken file where a real run would pick it up.
foreach(v CMD EXPECT_RC)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "expect_exit: -D ${v}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" cmd "${CMD}")

if(DEFINED BAD_CASES_DIR)
  file(REMOVE_RECURSE "${BAD_CASES_DIR}")
  file(MAKE_DIRECTORY "${BAD_CASES_DIR}")
  # A YAML syntax error on line 3 (an unclosed flow sequence).
  file(WRITE "${BAD_CASES_DIR}/broken.yaml"
       "attnconf_case: 4\nid: harness.bad.broken\nrules: [mask.causal\n")
  if(DEFINED COPY_CASES_FROM)
    file(GLOB_RECURSE valid LIST_DIRECTORIES false "${COPY_CASES_FROM}/*.yaml")
    list(SORT valid)
    if(valid)
      list(GET valid 0 first)
      file(COPY "${first}" DESTINATION "${BAD_CASES_DIR}")
    endif()
  endif()
endif()

execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
set(all "${so}${se}")
message(STATUS "exit ${rc}\n--- stdout ---\n${so}--- stderr ---\n${se}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit ${EXPECT_RC}, got ${rc}")
endif()
if(DEFINED EXPECT_REGEX AND NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'")
endif()
if(DEFINED FORBID_REGEX AND all MATCHES "${FORBID_REGEX}")
  message(FATAL_ERROR "output matches forbidden '${FORBID_REGEX}'")
endif()
