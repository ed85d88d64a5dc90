# expect_varies.cmake — an expected-results entry with `varies`: the results JSON carries the
# note, and the report quotes it in place of the run's values (which would differ from run to
# run), while a finding without `varies` keeps its values.  Such output can come out right by
# chance (OpenVINO's Lk = 0 rows, uninitialised scratch that happened to hold zeros, passed in
# one run of six): a PASS under a FAIL entry with `varies` is as expected, without it a change.
#   cmake -D HARNESS=attnconf -D BACKEND=misbehave_past_small.so -D PASSING=reference.so
#         -D EXPECT=misbehave_varies.yaml -D OUT=run.json -P expect_varies.cmake
get_filename_component(dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND "${HARNESS}" run --backend "${BACKEND}" --filter "sdpa.nomask.basic.*"
                        --expect "${EXPECT}" --format json --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
message(STATUS "run: exit ${rc}\n${so}${se}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the recorded divergences must be as expected (exit 0), got ${rc}")
endif()
file(READ "${OUT}" json)
if(NOT json MATCHES "\"varies\": \"a stand-in for output that differs between runs\"")
  message(FATAL_ERROR "the results JSON lacks the entry's varies note")
endif()
execute_process(COMMAND "${HARNESS}" report "${OUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE md
                ERROR_VARIABLE se)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "report: exit ${rc}: ${se}")
endif()
string(REGEX MATCH "  - `sdpa\\.nomask\\.basic\\.f16`[^\n]*" line "${md}")
if(NOT line MATCHES "Harness: the values differ from run to run, not quoted \\(a stand-in for output that differs between runs\\)\\.$")
  message(FATAL_ERROR "the report quotes values: '${line}'")
endif()
# Without `varies`, the same finding quotes what the harness measured.
file(READ "${EXPECT}" yaml)
string(REGEX REPLACE "\n    varies:[^\n]*" "" plain "${yaml}")
file(WRITE "${dir}/no_varies.yaml" "${plain}")
execute_process(COMMAND "${HARNESS}" run --backend "${BACKEND}" --filter "sdpa.nomask.basic.*"
                        --expect "${dir}/no_varies.yaml" --format json --out "${dir}/plain.json"
                RESULT_VARIABLE rc)
execute_process(COMMAND "${HARNESS}" report "${dir}/plain.json" OUTPUT_VARIABLE md2)
string(REGEX MATCH "  - `sdpa\\.nomask\\.basic\\.f16`[^\n]*" line "${md2}")
if(NOT rc EQUAL 0 OR line MATCHES "not quoted" OR NOT line MATCHES "Harness: ")
  message(FATAL_ERROR "without varies the report must quote the harness (exit ${rc}): '${line}'")
endif()
# A backend that passes the case (the reference) stands in for the run where the varying output
# happened to be right: as expected with `varies`, a status change without it.
string(REPLACE "backend: misbehave" "backend: reference" ref "${yaml}")
file(WRITE "${dir}/ref_varies.yaml" "${ref}")
string(REPLACE "backend: misbehave" "backend: reference" ref "${plain}")
file(WRITE "${dir}/ref_plain.yaml" "${ref}")
execute_process(COMMAND "${HARNESS}" run --backend "${PASSING}" --filter "sdpa.nomask.basic.*"
                        --expect "${dir}/ref_varies.yaml" --format json --out "${dir}/chance.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
file(READ "${dir}/chance.json" json)
if(NOT rc EQUAL 0 OR NOT json MATCHES "\"id\": \"sdpa\\.nomask\\.basic\\.f16\"[^}]*\"status\": \"PASS\"")
  message(FATAL_ERROR "a PASS under a FAIL entry with varies must be as expected (exit ${rc}):\n${so}${se}")
endif()
execute_process(COMMAND "${HARNESS}" run --backend "${PASSING}" --filter "sdpa.nomask.basic.*"
                        --expect "${dir}/ref_plain.yaml" --format json --out "${dir}/chance2.json"
                RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "a PASS under a FAIL entry without varies must be a status change (exit 0)")
endif()
# The lucky run's report counts, lists and words the case as the failing run's did; only the
# backend's name, version and files differ.
execute_process(COMMAND "${HARNESS}" report "${dir}/chance.json" RESULT_VARIABLE rc
                OUTPUT_VARIABLE md3 ERROR_VARIABLE se)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "report of the lucky run: exit ${rc}: ${se}")
endif()
string(REPLACE "reference" "misbehave" md3 "${md3}")
foreach(part "\n\\| \\*\\*all\\*\\* \\|[^\n]*" "\n\\| misbehave \\| [0-9][^\n]*"
             "\n\\| [0-9]+ \\| [0-9][^\n]*" "\n#### Divergences.*")
  string(REGEX MATCH "${part}" want "${md}")
  string(REGEX MATCH "${part}" got "${md3}")
  if(want STREQUAL "" OR NOT got STREQUAL want)
    message(FATAL_ERROR "the lucky run's report differs from the failing run's:\n"
                        "want: ${want}\ngot: ${got}")
  endif()
endforeach()
