# check_report.cmake — `attnconf perf-report` on the fixtures: two runs with the same arguments
# write the same bytes, and the rows that matter carry the right values.
#
#   cmake -D ATTNCONF=path/to/attnconf -D FIXTURES=perf/tests/fixtures -D OUT=dir -P check_report.cmake
#
# The inputs: slow10.json (cpu 10 % slower than base.json) and decode.json, with base.json as
# the baseline, two plots (one named after a suite) and the hyperfine fixture.
foreach(v ATTNCONF FIXTURES OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_report: -D ${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(args perf-report "${FIXTURES}/slow10.json" "${FIXTURES}/decode.json"
    --baseline "${FIXTURES}/base.json" --plot plots/prefill.svg --plot plots/extra.svg
    --hyperfine "${FIXTURES}/hyperfine.json" --note "Recorded on a shared 2-core virtual machine.")
foreach(n 1 2)
  execute_process(COMMAND "${ATTNCONF}" ${args} --out "${OUT}/report${n}.md"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "perf-report exited ${rc}: ${err}")
  endif()
endforeach()
# Without --out the same bytes go to stdout.
execute_process(COMMAND "${ATTNCONF}" ${args} OUTPUT_FILE "${OUT}/report3.md" RESULT_VARIABLE rc)
foreach(n 2 3)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}/report1.md"
                          "${OUT}/report${n}.md" RESULT_VARIABLE diff)
  if(NOT diff EQUAL 0)
    message(FATAL_ERROR "perf-report is not deterministic: ${OUT}/report1.md and report${n}.md differ")
  endif()
endforeach()

file(READ "${OUT}/report1.md" md)
# Each entry: a regex that must match a whole line of the report ('|' written as [|]).  The
# numbers are those of the fixtures (make_fixtures.py): cpu at ~70 GFLOP/s of a 181.3 GFLOP/s
# machine, 10 % slower than its baseline; the reference at ~1.3 GFLOP/s and SKIPPED over 5 GFLOP.
set(expect
  "## Performance \\(varies between runs\\)"
  "Machine: Intel\\(R\\) Xeon\\(R\\) CPU @ 2\\.20GHz, 2 cores, 24\\.0 GiB memory. limits: 181 GFLOP/s f32 FMA, 18\\.1 GB/s memory read \\(measured by `attnconf bench --peak`\\)\\. Recorded on a shared 2-core virtual machine\\."
  "### Suite prefill"
  # onnxruntime-opset23 was timed inside its exec: adapter ("timing": "adapter"): marked † in the
  # header, with the footnote under the table and in the introduction.
  "Times are medians, in-process \\(inside the adapter for a backend marked †\\) of 10 to 12 repetitions per shape .*"
  "[|] Shape [|] cpu time [|] cpu GFLOP/s [|] cpu % FMA peak [|] cpu × ref [|] cpu vs base [|] reference time [|] reference GFLOP/s [|] reference % FMA peak [|] reference vs base [|] onnxruntime-opset23† time [|] onnxruntime-opset23† GFLOP/s [|] onnxruntime-opset23† % FMA peak [|] onnxruntime-opset23† × ref [|] onnxruntime-opset23† vs base [|]"
  "† `onnxruntime-opset23`: time measured inside the adapter around the library call \\(reported by the exec: adapter, so the pipe transport is not included\\)\\."
  # L256 f32: cpu 8.53 ms = 63.2 GFLOP/s = 34.8 % of 181.3; the reference 416 ms (48.7x);
  # 1.11 x the baseline's 7.71 ms.
  "[|] `prefill\\.causal\\.L256\\.f32` [|] 8\\.53 ms [|] 63\\.2 [|] 34\\.8 [|] 48\\.7× [|] 1\\.11 [|] 416 ms [|] 1\\.30 [|] 0\\.715 [|] 1\\.00 [|] 15\\.9 ms [|] 33\\.8 [|] 18\\.6 [|] 26\\.1× [|] 1\\.00 [|]"
  "[|] `prefill\\.causal\\.L1024\\.f16` [|] 128 ms [|] 67\\.0 [|] 37\\.0 [|] — [|] 1\\.13 [|] SKIPPED [|] — [|] — [|] — [|] NOT_SUPPORTED [|] — [|] — [|] — [|] — [|]"
  "- `reference` SKIPPED: over --max-gflop 5 \\(8\\.6 GFLOP\\) \\(2 shapes: `prefill\\.causal\\.L1024\\.f32`, `prefill\\.causal\\.L1024\\.f16`\\)"
  "- `onnxruntime-opset23` NOT_SUPPORTED: backend lacks capability sdpa\\.causal_offset \\(1 shape: `prefill\\.causal\\.L1024\\.f16`\\)"
  "!\\[prefill: throughput by sequence length\\]\\(<plots/prefill\\.svg>\\)"
  "### Suite decode"
  "[|] Shape [|] cpu time [|] cpu GB/s [|] cpu % mem\\. bw [|] cpu × ref [|] reference time [|] reference GB/s [|] reference % mem\\. bw [|]"
  # Decode Lk 8192 f16: 8 kv heads x 8192 keys x 256 values x 2 bytes = 33.6 MB in 3.21 ms.
  "[|] `decode\\.B1\\.Lk8192\\.f16` [|] 3\\.21 ms [|] 10\\.5 [|] 57\\.8 [|] 11\\.7× [|] 37\\.6 ms [|] 0\\.893 [|] 4\\.93 [|]"
  "### Plots"
  "!\\[plot\\]\\(<plots/extra\\.svg>\\)"
  "[|] `build/default/conformance/attnconf run --backend reference --cases cases --format json` [|] 5 [|] 42\\.0 s [|] 40\\.2 s [|] 42\\.3 s [|]"
  "[|] `build/default/conformance/attnconf run --backend cpu --cases cases --format json` \\(exit status 1 in 5 of 5 runs\\) [|] 5 [|] [0-9.]+ s [|] [0-9.]+ s [|] [0-9.]+ s [|]")
foreach(re IN LISTS expect)
  if(NOT md MATCHES "(^|\n)${re}\n")
    message(FATAL_ERROR "perf-report: no line matches '${re}' in ${OUT}/report1.md:\n${md}")
  endif()
endforeach()
message(STATUS "perf-report: deterministic, ${OUT}/report1.md has every expected row")
