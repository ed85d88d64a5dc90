# check_device_bench.cmake — `attnconf bench` on a device backend (fake_device) reports the
# kernel's time and the copies apart, in the JSON and in the text (perf/README.md), and a host
# backend's shapes have no copy keys.
#
#   cmake -D HARNESS=attnconf -D DEVICE=fake_device.so -D HOST=reference.so -D SUITE=smoke.yaml
#         -D LIMITS=limits.json -D OUT=dir -P check_device_bench.cmake
foreach(v HARNESS DEVICE HOST SUITE LIMITS OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_device_bench: -D ${v}=... is required")
  endif()
endforeach()
set(id smoke.decode.k256.f32)
file(MAKE_DIRECTORY "${OUT}")
foreach(which DEVICE HOST)
  file(REMOVE "${OUT}/${which}.json")
  execute_process(COMMAND "${HARNESS}" bench --backend "${${which}}" --suite "${SUITE}"
                          --filter ${id} --limits "${LIMITS}" --min-time 0 --min-reps 3
                          --out "${OUT}/${which}.json"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text_${which} ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "bench on ${${which}} exited ${rc}: ${text_${which}} ${err}")
  endif()
  file(READ "${OUT}/${which}.json" json_${which})
endforeach()

string(JSON shape GET "${json_DEVICE}" backends 0 shapes 0)
string(JSON status GET "${shape}" status)
string(JSON device ERROR_VARIABLE noerr GET "${json_DEVICE}" backends 0 device)
if(NOT status STREQUAL "OK" OR noerr OR NOT device MATCHES "fake device")
  message(FATAL_ERROR "device bench: status ${status}, backend device '${device}': ${shape}")
endif()
string(JSON median GET "${shape}" median_s)
string(JSON io GET "${shape}" io_bytes)
string(JSON to_s GET "${shape}" copy_to_device_s)
string(JSON to_b GET "${shape}" copy_to_device_bytes)
string(JSON from_s GET "${shape}" copy_from_device_s)
string(JSON from_b GET "${shape}" copy_from_device_bytes)
# Sane: q, k, v in and out back are exactly the shape's bytes (no mask: via params); the times
# are positive and below a second for a 0.3 MiB copy on any machine.
math(EXPR total "${to_b} + ${from_b}")
if(NOT total EQUAL io OR to_b LESS_EQUAL from_b)
  message(FATAL_ERROR "copy bytes ${to_b} in + ${from_b} out, expected io_bytes ${io} in all")
endif()
foreach(t median to_s from_s)
  if(NOT ${t} MATCHES "^[0-9.]+(e-?[0-9]+)?$" OR ${t} STREQUAL "0" OR ${t} GREATER_EQUAL 1)
    message(FATAL_ERROR "${t} = ${${t}}: expected a time in (0, 1) s")
  endif()
endforeach()
if(NOT text_DEVICE MATCHES "${id} +OK[^\n]*\n    copies: to the device [0-9.]+ ms \\([0-9.]+ KiB\\), from the device [0-9.]+ ms \\([0-9.]+ KiB\\)")
  message(FATAL_ERROR "the text output lacks the copies line:\n${text_DEVICE}")
endif()

string(JSON hshape GET "${json_HOST}" backends 0 shapes 0)
string(JSON htype ERROR_VARIABLE absent TYPE "${hshape}" copy_to_device_s)
if(NOT absent OR text_HOST MATCHES "copies:")
  message(FATAL_ERROR "a host backend reports copies: ${hshape}")
endif()
message(STATUS "device bench ok: kernel ${median} s, copies ${to_s} s (${to_b} B) in, ${from_s} s (${from_b} B) out")
