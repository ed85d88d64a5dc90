# check_report.cmake — `attnconf perf-report` on the fixtures: two runs with the same arguments
# write the same bytes, and the rows that matter carry the right values.
#
#   cmake -D ATTNCONF=path/to/attnconf -D FIXTURES=perf/tests/fixtures -D OUT=dir -P check_report.cmake
#
# The inputs: slow10.json (cpu 10 % slower than base.json) and decode.json, with base.json as
# the baseline, two plots (one named after a suite) and the hyperfine fixture; then wide.json
# (13 backends) alone, whose measures take two tables each.
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
# Each entry: a regex that must match whole lines of the report ('|' written as [|]).  The
# numbers are those of the fixtures (make_fixtures.py): cpu at ~70 GFLOP/s of a 181.3 GFLOP/s
# machine, 10 % slower than its baseline; the reference at ~1.3 GFLOP/s and SKIPPED over 5 GFLOP.
set(expect
  "## Performance \\(varies between runs\\)"
  "Machine: Intel\\(R\\) Xeon\\(R\\) CPU @ 2\\.20GHz, 2 cores, 24\\.0 GiB memory. limits: 181 GFLOP/s f32 FMA, 18\\.1 GB/s memory read \\(measured by `attnconf bench --peak`\\)\\. Recorded on a shared 2-core virtual machine\\."
  "### Suite prefill"
  # onnxruntime-opset23 was timed inside its exec: adapter ("timing": "adapter"): marked † in the
  # header, with the footnote under the tables and in the introduction.
  "Times are medians, in-process \\(inside the adapter for a backend marked †\\) of 10 to 12 repetitions per shape .*"
  # One table per measure, the backends as columns.  L256 f32: cpu 8.53 ms = 63.2 GFLOP/s =
  # 34.8 % of 181.3; the reference 416 ms (48.7x); 1.11 x the baseline's 7.71 ms.  L1024 f16:
  # the reference SKIPPED, onnxruntime-opset23 NOT_SUPPORTED, in every measure's table.
  "[*][*]Median time[*][*]\n\n[|] Shape [|] cpu [|] reference [|] onnxruntime-opset23† [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 8\\.53 ms [|] 416 ms [|] 15\\.9 ms [|]\n[|] `prefill\\.causal\\.L256\\.f16` [|] [^\n]*\n[|] `prefill\\.causal\\.L1024\\.f32` [|] [^\n]*\n[|] `prefill\\.causal\\.L1024\\.f16` [|] 128 ms [|] SKIPPED [|] NOT_SUPPORTED [|]"
  "[*][*]GFLOP/s[*][*]\n\n[|] Shape [|] cpu [|] reference [|] onnxruntime-opset23† [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 63\\.2 [|] 1\\.30 [|] 33\\.8 [|]"
  "[|] `prefill\\.causal\\.L1024\\.f16` [|] 67\\.0 [|] SKIPPED [|] NOT_SUPPORTED [|]"
  "[*][*]% of the FMA peak[*][*]\n\n[|] Shape [|] cpu [|] reference [|] onnxruntime-opset23† [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 34\\.8 [|] 0\\.715 [|] 18\\.6 [|]"
  # x ref: every backend but the reference; a dash where the reference was not timed.
  "[*][*]× ref \\(the reference's time / the backend's\\)[*][*]\n\n[|] Shape [|] cpu [|] onnxruntime-opset23† [|]\n[|] --- [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 48\\.7× [|] 26\\.1× [|]"
  "[|] `prefill\\.causal\\.L1024\\.f16` [|] — [|] NOT_SUPPORTED [|]"
  "[*][*]vs base \\(the time / the baseline's. > 1: slower\\)[*][*]\n\n[|] Shape [|] cpu [|] reference [|] onnxruntime-opset23† [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 1\\.11 [|] 1\\.00 [|] 1\\.00 [|]"
  "[|] `prefill\\.causal\\.L1024\\.f16` [|] 1\\.13 [|] SKIPPED [|] NOT_SUPPORTED [|]"
  "† `onnxruntime-opset23`: time measured inside the adapter around the library call \\(reported by the exec: adapter, so the pipe transport is not included\\)\\."
  "- `reference` SKIPPED: over --max-gflop 5 \\(8\\.6 GFLOP\\) \\(2 shapes: `prefill\\.causal\\.L1024\\.f32`, `prefill\\.causal\\.L1024\\.f16`\\)"
  "- `onnxruntime-opset23` NOT_SUPPORTED: backend lacks capability sdpa\\.causal_offset \\(1 shape: `prefill\\.causal\\.L1024\\.f16`\\)"
  "!\\[prefill: throughput by sequence length\\]\\(<plots/prefill\\.svg>\\)"
  "### Suite decode"
  # Decode Lk 8192 f16: 8 kv heads x 8192 keys x 256 values x 2 bytes = 33.6 MB in 3.21 ms.
  "[*][*]Median time[*][*]\n\n[|] Shape [|] cpu [|] reference [|]\n[|] --- [|] ---: [|] ---: [|]\n([|] [^\n]*\n)*[|] `decode\\.B1\\.Lk8192\\.f16` [|] 3\\.21 ms [|] 37\\.6 ms [|]"
  "[*][*]GB/s[*][*]\n\n[|] Shape [|] cpu [|] reference [|]\n[|] --- [|] ---: [|] ---: [|]\n([|] [^\n]*\n)*[|] `decode\\.B1\\.Lk8192\\.f16` [|] 10\\.5 [|] 0\\.893 [|]"
  "[*][*]% of the memory read bandwidth[*][*]\n\n[|] Shape [|] cpu [|] reference [|]\n[|] --- [|] ---: [|] ---: [|]\n([|] [^\n]*\n)*[|] `decode\\.B1\\.Lk8192\\.f16` [|] 57\\.8 [|] 4\\.93 [|]"
  "[*][*]× ref \\(the reference's time / the backend's\\)[*][*]\n\n[|] Shape [|] cpu [|]\n[|] --- [|] ---: [|]\n([|] [^\n]*\n)*[|] `decode\\.B1\\.Lk8192\\.f16` [|] 11\\.7× [|]"
  "### Plots"
  "!\\[plot\\]\\(<plots/extra\\.svg>\\)"
  "[|] `build/default/conformance/attnconf run --backend reference --cases cases --format json` [|] 5 [|] 42\\.0 s [|] 40\\.2 s [|] 42\\.3 s [|]"
  "[|] `build/default/conformance/attnconf run --backend cpu --cases cases --format json` \\(exit status 1 in 5 of 5 runs\\) [|] 5 [|] [0-9.]+ s [|] [0-9.]+ s [|] [0-9.]+ s [|]")
foreach(re IN LISTS expect)
  if(NOT md MATCHES "(^|\n)${re}\n")
    message(FATAL_ERROR "perf-report: no line matches '${re}' in ${OUT}/report1.md:\n${md}")
  endif()
endforeach()

# 13 backends: each measure in two tables of near-equal width (at most 12 columns), each with the
# shape column; the x ref table has the 12 backends other than the reference.
execute_process(COMMAND "${ATTNCONF}" perf-report "${FIXTURES}/wide.json" --baseline
                        "${FIXTURES}/base.json" --out "${OUT}/wide.md" RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "perf-report wide.json exited ${rc}: ${err}")
endif()
file(READ "${OUT}/wide.md" md)
set(expect
  "[*][*]Median time[*][*]\n\n[|] Shape [|] cpu [|] reference [|] onnxruntime-opset23† [|] cpu-v01 [|] cpu-v02 [|] cpu-v03 [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 7\\.78 ms [|] 411 ms [|] 15\\.7 ms [|] 8\\.08 ms [|] 8\\.39 ms [|] 8\\.85 ms [|]\n([|] [^\n]*\n)*\n[|] Shape [|] cpu-v04 [|] cpu-v05 [|] cpu-v06 [|] cpu-v07 [|] cpu-v08 [|] cpu-v09 [|] cpu-v10 [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 9\\.25 ms [|] 9\\.64 ms [|] 10\\.0 ms [|] 10\\.4 ms [|] 10\\.8 ms [|] 11\\.1 ms [|] 11\\.6 ms [|]"
  "[*][*]× ref \\(the reference's time / the backend's\\)[*][*]\n\n[|] Shape [|] cpu [|] onnxruntime-opset23† [|] cpu-v01 [|] cpu-v02 [|] cpu-v03 [|] cpu-v04 [|]\n[|] --- [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|] ---: [|]\n[|] `prefill\\.causal\\.L256\\.f32` [|] 52\\.9× [|] 26\\.1× [|] 50\\.9× [|] 49\\.0× [|] 46\\.4× [|] 44\\.5× [|]\n([|] [^\n]*\n)*\n[|] Shape [|] cpu-v05 [|] cpu-v06 [|] cpu-v07 [|] cpu-v08 [|] cpu-v09 [|] cpu-v10 [|]"
  "[|] `prefill\\.causal\\.L1024\\.f16` [|] 1\\.02 [|] SKIPPED [|] NOT_SUPPORTED [|]")
foreach(re IN LISTS expect)
  if(NOT md MATCHES "(^|\n)${re}\n")
    message(FATAL_ERROR "perf-report: no line matches '${re}' in ${OUT}/wide.md:\n${md}")
  endif()
endforeach()
message(STATUS "perf-report: deterministic, ${OUT}/report1.md and wide.md have every expected row")
