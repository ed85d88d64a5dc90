# expect_out_untouched.cmake — an existing --out FILE survives a run that fails before any case.
#   cmake -D HARNESS=attnconf -D OUT=file -P expect_out_untouched.cmake
file(WRITE "${OUT}" "previous results\n")
execute_process(COMMAND "${HARNESS}" run --backend nosuch --format json --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
message(STATUS "exit ${rc}\n${so}${se}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit 1 (unknown backend), got ${rc}")
endif()
file(READ "${OUT}" kept)
if(NOT kept STREQUAL "previous results\n")
  message(FATAL_ERROR "--out ${OUT} was changed by a run that failed before any case: '${kept}'")
endif()
get_filename_component(dir "${OUT}" DIRECTORY)
get_filename_component(base "${OUT}" NAME)
file(GLOB leftovers "${dir}/.${base}.*")
if(leftovers)
  message(FATAL_ERROR "temporary file left behind: ${leftovers}")
endif()
# And a successful run replaces it with complete results.
execute_process(COMMAND "${HARNESS}" run --backend reference --filter "sdpa.nomask.basic.*"
                        --format json --out "${OUT}" RESULT_VARIABLE rc)
file(READ "${OUT}" now)
if(NOT rc EQUAL 0 OR NOT now MATCHES "\"total\": 3")
  message(FATAL_ERROR "a passing run did not write its results (exit ${rc})")
endif()
