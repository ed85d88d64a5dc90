# expect_fuzz.cmake — `attnconf fuzz` on one backend, judged.
#
#   cmake -D HARNESS=attnconf -D BACKEND=path/to/backend.so -D DIR=scratch-dir
#         (-D SECONDS=T | -D COUNT=N) [-D SEED=S] [-D CAUGHT=1] [-D META_ONLY=1]
#         [-D DRAW=uniform|edges|mixed]
#         -P expect_fuzz.cmake
#
# Default (survives): fuzz must exit 0 and report no failure.
# CAUGHT=1 (a mutant): fuzz must exit 1 within the time given, write case files into DIR (emptied
# first), and `attnconf run --backend BACKEND --cases DIR` must then fail them too (exit 1 with a
# FAIL / INCORRECT_DTYPE / ERROR / CRASH line for a fuzz case): the written case reproduces the
# failure without the fuzzer.  META_ONLY=1 passes --meta-only (only the metamorphic checks judge
# values) and requires the failure to come from one of them.  DRAW is fuzz's --draw (default
# uniform: the mutant catches below were measured on uniform draws; the edge table's own
# catches pass DRAW=edges, and the survival runs the command's default, mixed).
foreach(v HARNESS BACKEND DIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "expect_fuzz: -D ${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED SEED)
  set(SEED 1)
endif()
if(NOT DEFINED DRAW)
  set(DRAW uniform)
endif()
file(REMOVE_RECURSE "${DIR}")
set(cmd "${HARNESS}" fuzz --backend "${BACKEND}" --seed "${SEED}" --out-dir "${DIR}/cases"
        --json "${DIR}/fuzz.json" --draw "${DRAW}")
if(META_ONLY)
  list(APPEND cmd --meta-only)
endif()
if(DEFINED COUNT)
  list(APPEND cmd --count "${COUNT}")
else()
  list(APPEND cmd --seconds "${SECONDS}")
endif()
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
message(STATUS "fuzz: exit ${rc}\n--- stdout ---\n${so}--- stderr ---\n${se}")
if(se MATCHES "Sanitizer|runtime error|Segmentation|Aborted|core dumped|internal error")
  message(FATAL_ERROR "the fuzzer itself failed")
endif()

if(NOT CAUGHT)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected the backend to survive (exit 0), got exit ${rc}")
  endif()
  return()
endif()

if(NOT rc EQUAL 1 OR NOT so MATCHES "failed after")
  message(FATAL_ERROR "mutant not caught by fuzz: exit ${rc}")
endif()
file(GLOB written "${DIR}/cases/*.yaml")
if(NOT written)
  message(FATAL_ERROR "fuzz found a failure but wrote no case file into ${DIR}/cases")
endif()
file(READ "${DIR}/fuzz.json" json)
string(JSON secs GET "${json}" failure seconds)
string(JSON check GET "${json}" failure check)
if(META_ONLY AND check STREQUAL "differential")
  message(FATAL_ERROR "--meta-only: the failure came from the differential check")
endif()
execute_process(COMMAND "${HARNESS}" run --backend "${BACKEND}" --cases "${DIR}/cases"
                RESULT_VARIABLE rrc OUTPUT_VARIABLE rso ERROR_VARIABLE rse)
message(STATUS "replay: exit ${rrc}\n${rso}${rse}")
if(NOT rrc EQUAL 1 OR NOT rso MATCHES "(FAIL|INCORRECT_DTYPE|ERROR|CRASH) +fuzz\\.")
  message(FATAL_ERROR "the written case does not reproduce the failure (attnconf run exit ${rrc})")
endif()
message(STATUS "caught after ${secs} s (${check} check); the written case reproduces it")
