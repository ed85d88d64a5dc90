# expect_backend_info.cmake — `attnconf backend-info --backend cuda` on any machine:
#   with a usable CUDA device it describes the plugin (name: cuda, the device capability);
#   without one it refuses cleanly: exit 1, "not supported here" and the runtime's reason (no
#   driver, no device), never a crash or a loader error.
#   cmake -D HARNESS=attnconf -P expect_backend_info.cmake
execute_process(COMMAND "${HARNESS}" backend-info --backend cuda
                RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
set(all "${so}${se}")
message(STATUS "exit ${rc}\n${all}")
if(all MATCHES "cannot load|Segmentation|Aborted|core dumped|undefined symbol")
  message(FATAL_ERROR "the plugin did not load or crashed")
endif()
if(rc EQUAL 0)
  if(NOT so MATCHES "name: cuda" OR NOT so MATCHES "device")
    message(FATAL_ERROR "backend-info succeeded but does not describe the cuda plugin")
  endif()
elseif(rc EQUAL 1)
  if(NOT se MATCHES "backend 'cuda' open\\(\\) failed with code -4 \\(not supported here\\): no CUDA")
    message(FATAL_ERROR "no device: expected ENOTSUP with the reason (no CUDA ...)")
  endif()
else()
  message(FATAL_ERROR "unexpected exit status ${rc}")
endif()
