# expect_varies.cmake — an expected-results entry with `varies`: the results JSON carries the
# note, and the report quotes it in place of the run's values (which would differ from run to
# run), while a finding without `varies` keeps its values.
#   cmake -D HARNESS=attnconf -D BACKEND=misbehave_past_small.so -D EXPECT=misbehave_varies.yaml
#         -D OUT=run.json -P expect_varies.cmake
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
