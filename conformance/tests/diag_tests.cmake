# Diagnostics a backend author reads: what a failure says must be what happened.  Included from
# CMakeLists.txt here, after harness_cli_test and reference_test_plugin are defined.

# An exec: reply whose header came and whose payload stops 1 byte short: still the timeout's
# ERROR, but saying how much came (the header did: the adapter is stuck, not silent).
if(ATTNCONF_PYTHON3)
  harness_cli_test(exec.short_payload_timeout 1
    "ERROR +sdpa\\.nomask\\.d1\\.f32\n +adapter failure: adapter timed out after 1 s: reply to sdpa: payload of 'out' 15 of 16 bytes received \\(adapter stderr: bad_adapter\\(short_payload\\): sent 15 of 16 payload bytes, hanging\\)\n"
    run --backend "exec:${ATTNCONF_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/adapters/bad_adapter.py short_payload"
    --timeout 1 --filter "sdpa.nomask.d1.f32")
endif()

# A plugin's output descriptor (misbehave.c modes 20, 21): the dtype is judged before the sizes
# counted in it, and the strides by the rule exec: replies keep (xr_dense_perm), so neither
# reads as a write past the end.  The 2nd of sdpa.nomask.basic.{bf16,f16,f32} misbehaves.
if(ATTNCONF_PYTHON3)
  foreach(spec IN ITEMS
      "20|out_bool|INCORRECT_DTYPE|^output dtype bool, expected f16$"
      "21|zero_strides|FAIL|^backend set output strides \\[0,0,0,0\\]: not the dense strides \\[[0-9]+,[0-9]+,[0-9]+,1\\] of shape \\([0-9,]+\\), nor a permutation of its axes")
    misbehave_spec("${spec}")
    reference_test_plugin(misbehave_${what} backends/misbehave.c MISBEHAVE_MODE=${mode})
    foreach(where IN ITEMS worker in_process)
      set(extra "")
      if(where STREQUAL "in_process")
        set(extra --in-process)
      endif()
      add_test(NAME harness.output_check.${what}_${where}
        COMMAND "${ATTNCONF_PYTHON3}" "${CMAKE_CURRENT_SOURCE_DIR}/check_isolation.py"
                --rc 1 --bad 1 --status ${status} --message "${msg}"
                --out "${CMAKE_CURRENT_BINARY_DIR}/output_check.${what}_${where}.json"
                -- "$<TARGET_FILE:attnconf>" run --backend "$<TARGET_FILE:misbehave_${what}>"
                --cases "${ATTNCONF_CASES_DIR}" --filter "sdpa.nomask.basic.*" ${extra})
      set_tests_properties(harness.output_check.${what}_${where} PROPERTIES LABELS "harness"
                           TIMEOUT 120)
    endforeach()
  endforeach()
endif()

# A plugin that prints to stdout (misbehave mode 22: printf left in the buffer, and write(1)) in
# its 2nd sdpa.  In a worker that is stderr already; --in-process must keep it off attnconf's
# stdout too (backend/plugin.h, the stdout guard): the TAP stream starts with its version line
# and holds no plugin text, which lands on stderr, for run and for fuzz.
reference_test_plugin(misbehave_printf backends/misbehave.c MISBEHAVE_MODE=22)
foreach(where IN ITEMS worker in_process)
  set(extra "")
  if(where STREQUAL "in_process")
    set(extra "--in-process")
  endif()
  add_test(NAME harness.plugin_stdout.run_${where}
    COMMAND sh -c "d=\"$1/plugin_stdout_${where}\"; rm -rf \"$d\"; mkdir -p \"$d\" || exit 2
      \"$2\" run --backend \"$3\" --filter 'sdpa.nomask.basic.*' --format tap ${extra} >\"$d/out\" 2>\"$d/err\"; rc=$?
      echo \"exit $rc\"; echo '--- stdout ---'; cat \"$d/out\"; echo '--- stderr ---'; cat \"$d/err\"
      [ $rc -eq 0 ] && [ \"$(head -n 1 \"$d/out\")\" = 'TAP version 13' ] &&
      ! grep -q misbehave: \"$d/out\" && grep -q '^ok 3 - sdpa.nomask.basic.f32$' \"$d/out\" &&
      grep -q 'misbehave: printf by sdpa' \"$d/err\" && grep -q 'misbehave: written to fd 1 by sdpa' \"$d/err\"" sh
      "${CMAKE_CURRENT_BINARY_DIR}" $<TARGET_FILE:attnconf> $<TARGET_FILE:misbehave_printf>)
  set_tests_properties(harness.plugin_stdout.run_${where} PROPERTIES LABELS "harness" TIMEOUT 60)
endforeach()
add_test(NAME harness.plugin_stdout.fuzz_in_process
  COMMAND sh -c "d=\"$1/plugin_stdout_fuzz\"; rm -rf \"$d\"; mkdir -p \"$d\" || exit 2
    \"$2\" fuzz --backend \"$3\" --in-process --seed 1 --count 5 --out-dir \"$d/fuzz\" >\"$d/out\" 2>\"$d/err\"; rc=$?
    echo \"exit $rc\"; echo '--- stdout ---'; cat \"$d/out\"; echo '--- stderr ---'; cat \"$d/err\"
    [ $rc -eq 0 ] && ! grep -q misbehave: \"$d/out\" && grep -q 'misbehave: printf by sdpa' \"$d/err\" &&
    grep -q 'misbehave: written to fd 1 by sdpa' \"$d/err\"" sh
    "${CMAKE_CURRENT_BINARY_DIR}" $<TARGET_FILE:attnconf> $<TARGET_FILE:misbehave_printf>)
set_tests_properties(harness.plugin_stdout.fuzz_in_process PROPERTIES LABELS "harness" TIMEOUT 60)
