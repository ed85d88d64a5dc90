# expect_mutant_caught.cmake — prove that a family of cases catches a deliberately broken backend
# (or, as a control, that it does not flag a backend whose bug lies elsewhere).
#
#   cmake -D HARNESS=attnconf -D BACKEND=path/to/mutant.so -D FILTER='sdpa.causal.*'
#         [-D MIN_FAILS=1] [-D MIN_DTYPES=0] [-D EXPECT_PASS=1] [-D CASES=dir] [-D OUT=file.json]
#         -P expect_mutant_caught.cmake
#
# Default (caught): passes iff the harness exits 1 AND the JSON results hold at least MIN_FAILS
# results whose id matches FILTER and whose status is FAIL, INCORRECT_DTYPE or ERROR (every way
# a case can flag a backend: a silent upcast is INCORRECT_DTYPE, not FAIL).  A mutation test
# that only checked the exit status would also "pass" when the harness crashed or could not
# load the backend.  MIN_DTYPES: the catching cases must also span at least this many float
# dtypes (each result's "dtype": q's for sdpa, the cache's for cache cases; "bool" for the mask
# builder does not count; results without one fall back to the id's last component, .f32 /
# .f16 / .bf16), so a catch is not an accident of one dtype.
# EXPECT_PASS=1 (control): passes iff the harness exits 0, no result is bad and at least one
# case ran, so we know the check above is specific to the mutated behaviour.
foreach(v HARNESS BACKEND FILTER)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "expect_mutant_caught: -D ${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED MIN_FAILS)
  set(MIN_FAILS 1)
endif()
if(NOT DEFINED MIN_DTYPES)
  set(MIN_DTYPES 0)
endif()
if(NOT DEFINED OUT)
  string(MAKE_C_IDENTIFIER "${FILTER}" tag)
  get_filename_component(bname "${BACKEND}" NAME_WE)
  set(OUT "${CMAKE_CURRENT_BINARY_DIR}/mutant_${bname}_${tag}.json")
endif()
set(cmd "${HARNESS}" run --backend "${BACKEND}" --filter "${FILTER}" --format json --out "${OUT}")
if(DEFINED CASES)
  list(APPEND cmd --cases "${CASES}")
endif()
file(REMOVE "${OUT}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
message(STATUS "exit ${rc}; stdout: ${so}; stderr: ${se}")
# Exit 2 is a usage error (e.g. a FILTER no case matches): the results file may exist but is
# empty, so say why instead of failing on its JSON.
if(NOT EXISTS "${OUT}" OR rc EQUAL 2)
  message(FATAL_ERROR "no results in ${OUT} (exit ${rc}): ${se}")
endif()

file(READ "${OUT}" json)
string(JSON n ERROR_VARIABLE jerr LENGTH "${json}" results)
if(jerr)
  message(FATAL_ERROR "${OUT}: not attnconf JSON results: ${jerr}")
endif()
set(bad 0)
set(passes 0)
set(bad_ids "")
set(bad_dtypes "")
if(n GREATER 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON id GET "${json}" results ${i} id)
    string(JSON st GET "${json}" results ${i} status)
    # FILTER is a shell glob of [a-z0-9_.*?]: turn it into an anchored regex.
    string(REPLACE "." "\\." re "${FILTER}")
    string(REPLACE "*" ".*" re "${re}")
    string(REPLACE "?" "." re "${re}")
    if(NOT id MATCHES "^${re}$")
      continue()
    endif()
    if(st MATCHES "^(FAIL|INCORRECT_DTYPE|ERROR)$")
      math(EXPR bad "${bad} + 1")
      list(APPEND bad_ids "${id} (${st})")
      string(JSON dt ERROR_VARIABLE dterr GET "${json}" results ${i} dtype)
      if(dterr AND id MATCHES "\\.(f32|f16|bf16)$")
        set(dt "${CMAKE_MATCH_1}")
      endif()
      if(dt MATCHES "^(f32|f16|bf16)$")
        list(APPEND bad_dtypes "${dt}")
      endif()
    endif()
    if(st MATCHES "^(PASS|EXPECTED_ERROR)$")
      math(EXPR passes "${passes} + 1")
    endif()
  endforeach()
endif()

if(EXPECT_PASS)
  if(NOT rc EQUAL 0 OR bad GREATER 0 OR passes EQUAL 0)
    message(FATAL_ERROR "control failed: expected exit 0 and no bad result for '${FILTER}', "
                        "got exit ${rc}, ${bad} bad, ${passes} passed")
  endif()
  message(STATUS "control ok: ${passes} cases of '${FILTER}' pass on ${BACKEND}")
else()
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "mutant not caught: expected exit 1, got ${rc} (${bad} caught)")
  endif()
  if(bad LESS MIN_FAILS)
    message(FATAL_ERROR "mutant not caught: ${bad} FAIL/INCORRECT_DTYPE/ERROR among "
                        "'${FILTER}' (need ${MIN_FAILS})")
  endif()
  list(REMOVE_DUPLICATES bad_dtypes)
  list(LENGTH bad_dtypes ndtypes)
  if(ndtypes LESS MIN_DTYPES)
    message(FATAL_ERROR "mutant caught in ${ndtypes} dtype(s) (${bad_dtypes}) among '${FILTER}' "
                        "(need ${MIN_DTYPES})")
  endif()
  list(SORT bad_dtypes)
  message(STATUS "mutant caught by ${bad} cases in ${ndtypes} dtype(s) (${bad_dtypes}): ${bad_ids}")
endif()
