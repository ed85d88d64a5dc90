# attnconf_exec.py (conformance/adapters), the Python side of the exec protocol: driven by
# check_exec_py.py (standard library, the Debian python3) with adapters run under
# ATTNCONF_EXEC_PYTHON (the module needs numpy).  Each scenario is its own test.
if(ATTNCONF_PYTHON3 AND ATTNCONF_EXEC_PYTHON)
  foreach(scenario IN ITEMS no_bytecode readme_skeleton options channel_closed)
    add_test(NAME harness.exec_py.${scenario}
      COMMAND "${ATTNCONF_PYTHON3}" "${CMAKE_CURRENT_SOURCE_DIR}/check_exec_py.py"
              --python "${ATTNCONF_EXEC_PYTHON}" --workdir "${CMAKE_CURRENT_BINARY_DIR}/exec_py"
              --harness "$<TARGET_FILE:attnconf>" --cases "${ATTNCONF_CASES_DIR}"
              ${scenario})
    set_tests_properties(harness.exec_py.${scenario} PROPERTIES LABELS "harness;exec" TIMEOUT 60)
  endforeach()
else()
  message(STATUS "attnconf: harness.exec_py.* not registered: no python3, or no third-party "
                 "Python with numpy (ATTNCONF_EXEC_PYTHON)")
endif()
