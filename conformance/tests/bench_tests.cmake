# bench_tests.cmake — ctests of `attnconf bench` (harness/bench*.c), included from
# CMakeLists.txt in this directory.  No timing is asserted: these check the arithmetic, the
# JSON, the validation verdicts, the isolation and the input checks.  The bench runs use the
# smoke suite with --min-time 0.02 --min-reps 3 and the fixed limits of
# perf/tests/suites/limits.json, so each takes about a second even with the reference.

set(bench_suites "${PROJECT_SOURCE_DIR}/perf/suites")
set(bench_fixtures "${PROJECT_SOURCE_DIR}/perf/tests/suites")
set(bench_quick --limits "${bench_fixtures}/limits.json" --min-time 0.02 --min-reps 3)

# Unit tests: the closed-form counts against the keep rule, the suite reader's errors.
# bench.h is private to the bench room: the test compiles the two modules with the room's folder.
add_executable(test_bench test_bench.c ../harness/bench/bench_count.c ../harness/bench/bench_suite.c)
target_include_directories(test_bench PRIVATE ../harness/bench)
target_compile_definitions(test_bench PRIVATE PERF_SUITES_DIR="${bench_suites}")
target_link_libraries(test_bench PRIVATE attncase attnref PkgConfig::CRITERION m)
criterion_discover_tests(test_bench LABELS "unit;harness")

# A test-only backend with fewer capabilities (NOT_SUPPORTED, the mask route) that can crash.
reference_test_plugin(bench_limited backends/bench_limited.c)

# Input errors: exit 2 with FILE:LINE: FIELD: reason, before any backend runs.
harness_cli_test(bench.bad_window 2
  "bad_window_no_causal\\.yaml:13: shapes\\[0\\]\\.window: needs causal: true"
  bench --backend ${ref} --suite "${bench_fixtures}/bad_window_no_causal.yaml" ${bench_quick})
harness_cli_test(bench.bad_lengths 2
  "bad_lengths\\.yaml:14: shapes\\[0\\]\\.lengths: 2 entries, batch is 3"
  bench --backend ${ref} --suite "${bench_fixtures}/bad_lengths.yaml" ${bench_quick})
harness_cli_test(bench.bad_syntax 2 "bad_syntax\\.yaml:8:[0-9]+: yaml: did not find expected"
  bench --backend ${ref} --suite "${bench_fixtures}/bad_syntax.yaml" ${bench_quick})
harness_cli_test(bench.bad_too_big 2
  "bad_too_big\\.yaml:7: shapes\\[0\\]: k has more than 2\\^31 elements"
  bench --backend ${ref} --suite "${bench_fixtures}/bad_too_big.yaml" ${bench_quick})
harness_cli_test(bench.bad_root_key 2 "bad_root_key\\.yaml:5: repetitions: unknown key"
  bench --backend ${ref} --suite "${bench_fixtures}/bad_root_key.yaml" ${bench_quick})
harness_cli_test(bench.bad_limits 2
  "--limits .*bad_limits\\.json: machine\\.fma_gflops: expected a positive number"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml"
  --limits "${bench_fixtures}/bad_limits.json")
# A --limits path that is missing or a directory: the file and the reason, no parser position.
harness_cli_test(bench.limits_missing 2
  "--limits .*no_such_limits\\.json: No such file or directory"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml"
  --limits "${bench_fixtures}/no_such_limits.json")
# Limits that --peak measured while other processes had the CPUs: the warning again, on use.
harness_cli_test(bench.limits_low_share 0
  "warning: --limits .*low_share_limits\\.json was measured with only 66% of the CPUs"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml" --filter "smoke.causal.L64.f32"
  --limits "${bench_fixtures}/low_share_limits.json" --min-time 0.02 --min-reps 3)
harness_cli_test(bench.limits_directory 2 "--limits .*suites: not a regular file"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml" --limits "${bench_fixtures}")
harness_cli_test(bench.no_suite 2 "--suite is required" bench --backend ${ref})
# An exec: adapter that does not start fails up front, like a plugin that does not load.
harness_cli_test(bench.exec_no_hello 1
  "attnconf bench: exec:true: adapter exited with status 0 \\(nothing on stderr\\)"
  bench --backend "exec:true" --suite "${bench_suites}/smoke.yaml" ${bench_quick})
harness_cli_test(bench.filter_none 2
  "error: --filter 'nothing\\.\\*' matches no benchmark of .*smoke\\.yaml \\(a glob is matched against"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml" --filter "nothing.*" ${bench_quick})
# One glob of two selects nothing: the other's benchmarks run, with a warning naming it.
harness_cli_test(bench.filter_one_unmatched 0
  "1 OK, 0 INCORRECT.*warning: --filter 'nothing\\.\\*' matches no benchmark of .*smoke\\.yaml"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml" --filter "nothing.*"
  --filter "smoke.causal.L64.f32" ${bench_quick})
harness_cli_test(bench.reps_order 2 "--max-reps 4 is below --min-reps 5"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml" --min-reps 5 --max-reps 4)
# --max-reps alone is judged against the --min-reps in force: the suite's defaults where it has
# them (a --max-reps under 10 ran nothing before), else --min-reps's default, which the message
# names.
harness_cli_test(bench.reps_default_order 2 "--max-reps 9 is below the default --min-reps 10"
  bench --backend ${ref} --suite "${bench_suites}/smoke.yaml" --max-reps 9)
harness_cli_test(bench.reps_suite_order 2 "--max-reps 2 is below the suite's min_reps 3"
  bench --backend ${ref} --suite "${bench_fixtures}/defaults_reps.yaml" --max-reps 2)
harness_cli_test(bench.reps_suite_defaults 0 "1 OK, 0 INCORRECT"
  bench --backend ${ref} --suite "${bench_fixtures}/defaults_reps.yaml"
  --limits "${bench_fixtures}/limits.json" --max-reps 4)
harness_cli_test(bench.peak_alone 2 "--peak takes only --out" bench --peak --suite x.yaml)
harness_cli_test(bench.bad_backend 1 "backend 'nosuch' not found"
  bench --backend nosuch --suite "${bench_suites}/smoke.yaml" ${bench_quick})
# A plugin that crashes while loading is a load error too (it is loaded in a worker).
harness_cli_test_forbid(bench.open_segv 1
  "attnconf bench: .*bad_abi_open_segv\\.so: loading the backend killed the worker with signal 11 \\(Segmentation fault\\)"
  "${no_sanitizer}"
  bench --backend $<TARGET_FILE:bad_abi_open_segv> --suite "${bench_suites}/smoke.yaml" ${bench_quick})
harness_cli_test(bench.usage 0 "usage: attnconf bench" bench --help)
harness_cli_test(bench.top_usage 0 "attnconf bench --backend" --help)

if(ATTNCONF_PYTHON3)
  set(check_bench "${ATTNCONF_PYTHON3}" "${CMAKE_CURRENT_SOURCE_DIR}/check_bench.py")
  set(bench_out "${CMAKE_CURRENT_BINARY_DIR}/bench")
  file(MAKE_DIRECTORY "${bench_out}")
  # The reference on every smoke shape: all OK, exit 0, the JSON exactly as specified and its
  # numbers recomputed independently.
  add_test(NAME harness.bench.smoke_reference
    COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/ref.json"
            --rc 0 -- $<TARGET_FILE:attnconf> bench --backend ${ref} ${bench_quick}
            --label "ctest")
  # A wrong backend is INCORRECT (exit 1): top-left causal alignment differs only where
  # Lq < Lk (the chunk shape); everything else still passes.
  add_test(NAME harness.bench.mutant_incorrect
    COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/topleft.json"
            --rc 1 --status "smoke.chunk.*=INCORRECT"
            --message "smoke.chunk.*=^row \\[0,0,0\\]: [0-9]+ of 32 elements out of tolerance"
            -- $<TARGET_FILE:attnconf> bench --backend $<TARGET_FILE:mutant_topleft>
            ${bench_quick})
  # Capabilities and isolation: f16/bf16 NOT_SUPPORTED, the parameters the backend lacks
  # passed as a boolean mask ("via": "mask") and still validated, and a SIGSEGV in the timed
  # calls of one benchmark an ERROR naming the signal while the others run (exit 1).
  add_test(NAME harness.bench.limited_backend
    COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/limited.json"
            --rc 1 --status "*.f16=NOT_SUPPORTED" --status "*.bf16=NOT_SUPPORTED"
            --status "smoke.chunk.*.f32=ERROR"
            --message "smoke.chunk.*.f32=crashed: signal 11"
            --message "*.f16=^needs f16$" --message "*.bf16=^needs bf16$"
            --via "smoke.padded.*.f32=mask" --via "smoke.window.*.f32=mask"
            -- $<TARGET_FILE:attnconf> bench --backend $<TARGET_FILE:bench_limited>
            --backend-option crash_on_lk=80 ${bench_quick})
  # --max-gflop 0 skips everything: exit 0, nothing run.
  add_test(NAME harness.bench.max_gflop_skips
    COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/skip.json"
            --rc 0 --status "*=SKIPPED" --message "*=GFLOP per call, over --max-gflop 0$"
            -- $<TARGET_FILE:attnconf> bench --backend ${ref} --max-gflop 0 ${bench_quick})
  # --peak measures (about 6 s of both cores): positive numbers, no threshold; the FMA chains are
  # those of the widest ISA the cpu backend would use (ATTNCONF_CPU_ISA narrowing it, an ISA the
  # CPU lacks refused), checked against /proc/cpuinfo's flags and what this build has.
  set(peak_built "")
  if(TARGET cpu_kern_avx512_obj)
    list(APPEND peak_built avx512)
  endif()
  if(TARGET cpu_kern_avx2_obj)
    list(APPEND peak_built avx2)
  endif()
  string(REPLACE ";" "," peak_built "${peak_built}")
  add_test(NAME harness.bench.peak
    COMMAND ${check_bench} --peak --out "${bench_out}/peak.json" --isa-env auto
            --built "${peak_built}" -- $<TARGET_FILE:attnconf> bench --peak)
  foreach(isa IN ITEMS avx512 avx2 portable)
    add_test(NAME harness.bench.peak_${isa}
      COMMAND ${check_bench} --peak --out "${bench_out}/peak_${isa}.json" --isa-env ${isa}
              --built "${peak_built}" -- $<TARGET_FILE:attnconf> bench --peak)
    set_tests_properties(harness.bench.peak_${isa} PROPERTIES LABELS "harness" TIMEOUT 120
      SKIP_RETURN_CODE 77)
  endforeach()
  # exec: adapters (PROTOCOL.md), timed by the "seconds" of their sdpa replies: the test-only
  # bad_adapter.py (standard library, f32 only, SDPA in pure Python, so two small shapes with
  # lengths, left padding and a causal offset): mode timed reports seconds ("timing":
  # "adapter", positive times, validated like any backend); mode ok reports none, so every
  # benchmark it runs is an ERROR saying so, and one the up-front capability check refuses is
  # still NOT_SUPPORTED.
  set(bad_adapter "${CMAKE_CURRENT_SOURCE_DIR}/adapters/bad_adapter.py")
  set(bench_exec_small --filter "smoke.offset.*" --filter "smoke.padded.*")
  add_test(NAME harness.bench.exec_adapter_timed
    COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/exec.json"
            --rc 0 --timing adapter ${bench_exec_small}
            -- $<TARGET_FILE:attnconf> bench
            --backend "exec:${ATTNCONF_PYTHON3} ${bad_adapter} timed" ${bench_quick})
  add_test(NAME harness.bench.exec_adapter_no_seconds
    COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/exec0.json"
            --rc 1 --timing adapter ${bench_exec_small} --filter "smoke.causal.*"
            --status "smoke.offset.*=ERROR" --status "smoke.padded.*=ERROR"
            --status "smoke.causal.*.f32=ERROR" --status "smoke.causal.*=NOT_SUPPORTED"
            --message "smoke.*.f32=^repetition 1: the adapter reported no time for its call: an exec: backend is timed by the \"seconds\" of its sdpa reply"
            -- $<TARGET_FILE:attnconf> bench
            --backend "exec:${ATTNCONF_PYTHON3} ${bad_adapter} ok" ${bench_quick})
  # No memory for the buffer of the read bandwidth beside a memory-bound shape (ulimit -v of
  # 60 MB: 4 x the last-level cache cannot be mapped, or its threads not started): the benchmark
  # is still OK, without read_gbs_beside, read_beside_note saying why.  Not under ASan, which
  # reserves terabytes of address space.
  if(NOT CMAKE_C_FLAGS MATCHES "sanitize=address")
    add_test(NAME harness.bench.read_beside_no_buffer
      COMMAND sh -c "rm -f \"$4\"; (ulimit -v 60000 && exec \"$0\" bench --backend \"$1\" --suite \"$2\" --filter smoke.decode.k256.f32 --limits \"$3\" --min-time 0.02 --min-reps 3 --out \"$4\") && grep -q '\"status\": \"OK\"' \"$4\" && grep -q '\"read_beside_note\": \"no read bandwidth beside the repetitions (' \"$4\" && ! grep -q read_gbs_beside \"$4\""
              $<TARGET_FILE:attnconf> ${ref} "${bench_suites}/smoke.yaml"
              "${bench_fixtures}/limits.json" "${bench_out}/nobuffer.json")
    set_tests_properties(harness.bench.read_beside_no_buffer PROPERTIES LABELS "harness"
      TIMEOUT 120)
  endif()
  # --huge-pages (bench_pages.c): what of a 32 MiB K and V sat on huge pages with and without
  # it, and the GLIBC_TUNABLES an exec: adapter started with; where THP is off, the refusal.
  # Under ASan its allocator, not glibc's malloc, holds K and V: bench notes it, the test knows.
  if(CMAKE_C_FLAGS MATCHES "sanitize=address")
    set(huge_malloc asan)
  else()
    set(huge_malloc glibc)
  endif()
  add_test(NAME harness.bench.huge_pages
    COMMAND ${ATTNCONF_PYTHON3} "${CMAKE_CURRENT_SOURCE_DIR}/check_huge_pages.py"
            $<TARGET_FILE:attnconf> ${ref} ${ATTNCONF_PYTHON3} ${bad_adapter}
            "${bench_fixtures}/huge_pages.yaml" "${bench_fixtures}/limits.json"
            "${bench_out}/huge_pages" ${huge_malloc})
  set_tests_properties(harness.bench.huge_pages PROPERTIES LABELS "harness" TIMEOUT 300)
  set_tests_properties(harness.bench.smoke_reference harness.bench.mutant_incorrect
    harness.bench.limited_backend harness.bench.max_gflop_skips harness.bench.peak
    harness.bench.exec_adapter_timed harness.bench.exec_adapter_no_seconds
    PROPERTIES LABELS "harness" TIMEOUT 120)
  # attnconf_exec.py's "seconds" (conformance/adapters): tests/adapters/timing_adapter.py sleeps
  # 0.05 s outside its numpy SDPA in every request.  Wrapped in attnconf_exec.timed, the call
  # alone is reported (a median far below the pause); wrapped in nothing, the framework reports
  # the whole handler (never below the pause).  Needs numpy: ATTNCONF_EXEC_PYTHON.
  if(ATTNCONF_EXEC_PYTHON)
    set(timing_adapter "${ATTNCONF_EXEC_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/adapters/timing_adapter.py")
    set(timing_small --filter "smoke.offset.*" --filter "smoke.chunk.*.f32"
        --filter "smoke.decode.*.f32")
    add_test(NAME harness.bench.exec_framework_helper
      COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/helper.json"
              --rc 0 --timing adapter ${timing_small} --median "*=0:0.04"
              -- $<TARGET_FILE:attnconf> bench --backend "exec:${timing_adapter} helper"
              ${bench_quick})
    add_test(NAME harness.bench.exec_framework_default
      COMMAND ${check_bench} --suite "${bench_suites}/smoke.yaml" --out "${bench_out}/default.json"
              --rc 0 --timing adapter ${timing_small} --median "*=0.05:60"
              -- $<TARGET_FILE:attnconf> bench --backend "exec:${timing_adapter} default"
              ${bench_quick})
    set_tests_properties(harness.bench.exec_framework_helper
      harness.bench.exec_framework_default PROPERTIES LABELS "harness" TIMEOUT 120)
  else()
    message(STATUS "attnconf: harness.bench.exec_framework_* not registered: no third-party "
                   "Python with numpy (ATTNCONF_EXEC_PYTHON)")
  endif()
else()
  message(WARNING "python3 not found: the harness.bench.* JSON checks are not registered")
endif()

# A benchmark that hangs (misbehave_hang: on its 2nd call) or closes its pipe and then hangs
# (misbehave_closefds_hang) is killed at --timeout and is an ERROR; bench goes on and exits 1.
foreach(m IN ITEMS hang closefds_hang)
  if(NOT TARGET misbehave_${m}) # built with python3 (CMakeLists.txt, the isolation tests)
    continue()
  endif()
  harness_cli_test(bench.timeout_${m} 1
    "smoke\\.causal\\.L64\\.f32 +ERROR.*no result after 2 s \\(--timeout\\): the benchmark process was killed"
    bench --backend $<TARGET_FILE:misbehave_${m}> --suite "${bench_suites}/smoke.yaml"
    --filter smoke.causal.L64.f32 ${bench_quick} --timeout 2)
endforeach()
