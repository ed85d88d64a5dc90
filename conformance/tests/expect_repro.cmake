# expect_repro.cmake — write the reproducer of one case with `attnconf repro`, run it alone and
# check its verdict (the ctests conformance.repro.*, conformance/thirdparty/CMakeLists.txt).
#
#   cmake -D ATTNCONF=attnconf -D BACKEND=spec [-D OPTIONS="k=v|k=v"] [-D WRITER=exec:CMD]
#         -D CASES=dir -D CASE=id -D DIR=scratch -D PYTHON=python3 -D EXPECT_RC=0|1
#         -D EXPECT_REGEX=re [-D CC=cc -D GGML_PREFIX=dir] -P expect_repro.cmake
#
# The script runs from DIR (a fresh directory outside the checkout) under `PYTHON -I` (isolated:
# no PYTHONPATH, no user site, not the script's own directory's neighbours), so nothing of
# attnconf can be imported: it proves the reproducer needs only the library and numpy.  A C
# reproducer is compiled with CC against GGML_PREFIX (include/ and lib64/) and run from DIR.
foreach(v ATTNCONF BACKEND CASES CASE DIR EXPECT_RC EXPECT_REGEX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "expect_repro: -D ${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(cmd "${ATTNCONF}" repro --backend "${BACKEND}" --cases "${CASES}" --case "${CASE}")
if(DEFINED OPTIONS AND NOT OPTIONS STREQUAL "")
  string(REPLACE "|" ";" opts "${OPTIONS}")
  foreach(kv IN LISTS opts)
    list(APPEND cmd --backend-option "${kv}")
  endforeach()
endif()
if(DEFINED WRITER)
  list(APPEND cmd --writer "${WRITER}")
endif()
if(DEFINED CC)
  set(file "${DIR}/repro.c")
else()
  set(file "${DIR}/repro.py")
endif()
execute_process(COMMAND ${cmd} --out "${file}" RESULT_VARIABLE rc OUTPUT_VARIABLE so
                ERROR_VARIABLE se)
message(STATUS "attnconf repro: exit ${rc}\n${so}${se}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "attnconf repro failed (exit ${rc})")
endif()

if(DEFINED CC)
  execute_process(COMMAND "${CC}" -std=c11 -O1 -Wall -Werror -o "${DIR}/repro" "${file}"
                          "-I${GGML_PREFIX}/include" "-L${GGML_PREFIX}/lib64"
                          "-Wl,-rpath,${GGML_PREFIX}/lib64" -lggml -lggml-base -lggml-cpu -lm
                  WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE so
                  ERROR_VARIABLE se)
  message(STATUS "cc: exit ${rc}\n${so}${se}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the C reproducer does not compile")
  endif()
  set(run "${DIR}/repro")
else()
  set(run "${PYTHON}" -I "${file}")
endif()
execute_process(COMMAND ${run} WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE so
                ERROR_VARIABLE se)
set(all "${so}${se}")
message(STATUS "the reproducer: exit ${rc}\n--- stdout ---\n${so}--- stderr ---\n${se}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "the reproducer exited ${rc}, expected ${EXPECT_RC}")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "the reproducer's output does not match: ${EXPECT_REGEX}")
endif()
