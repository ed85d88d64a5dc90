# criterion_discover_tests(target LABELS l1;l2)
# Registers one ctest test per Criterion test of `target`, discovered after each build from
# `target --list` (a hand-written list would go stale, and Criterion's --filter silently passes
# when it matches nothing).
function(criterion_discover_tests target)
  cmake_parse_arguments(arg "" "" "LABELS" ${ARGN})
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" -D "EXE=$<TARGET_FILE:${target}>" -D "PREFIX=${target}"
            -D "OUT=${ctest_file}" -D "LABELS=${arg_LABELS}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/CriterionDiscoverScript.cmake"
    BYPRODUCTS "${ctest_file}" VERBATIM)
  set(inc "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${inc}" "if(EXISTS \"${ctest_file}\")\n  include(\"${ctest_file}\")\nelse()\n  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${inc}")
endfunction()
