# install_test.cmake — ctest install.backend_template: install this build into a scratch prefix,
# build examples/backend-template against it as a separate project (find_package(attnconf),
# attnconf_add_tests) and run that project's ctest; then attnconf_add_tests's options (SHARDS
# selecting what the tests per family do), the README's CMake project (it must leave the plugin
# examples/ci-shards runs; both found at TEMPLATE_DIR/../..), the README's pkg-config compile
# line, the installed harness's own defaults (cases and backends found relative to itself, after
# the whole prefix is moved), and the installed attnconf_exec.py imported from where the package
# says it is.  Run by cmake/install.cmake's add_test with -D:
#   BUILD_DIR TEMPLATE_DIR WORK GENERATOR MAKE_PROGRAM C_COMPILER PKG_CONFIG
#   BINDIR LIBDIR INCLUDEDIR CASESDIR BACKENDDIR DOCDIR PYTHONDIR (the layout, relative)
#   EXEC_PYTHON (a Python with numpy; empty: the module's import is not checked)
foreach(v BUILD_DIR TEMPLATE_DIR WORK GENERATOR C_COMPILER BINDIR LIBDIR INCLUDEDIR CASESDIR
          BACKENDDIR DOCDIR PYTHONDIR EXEC_PYTHON)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_test: -D ${v}=... is required")
  endif()
endforeach()

# run(<what> <expected exit> <output variable> COMMAND...): run, show, check the exit status.
function(run what rc_want out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE so ERROR_VARIABLE se)
  message(STATUS "${what}: exit ${rc}\n${so}${se}")
  if(NOT rc STREQUAL "${rc_want}")
    message(FATAL_ERROR "${what}: expected exit ${rc_want}, got ${rc}")
  endif()
  set(${out} "${so}${se}" PARENT_SCOPE)
endfunction()

function(must_match what text re)
  if(NOT text MATCHES "${re}")
    message(FATAL_ERROR "${what}: output does not match '${re}'")
  endif()
endfunction()

# A literal as a regular expression (build paths and family names hold '.', maybe '+').
function(re_quote text out)
  string(REGEX REPLACE "([][.*+?^$(){}|\\\\])" "\\\\\\1" q "${text}")
  set(${out} "${q}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK}/prefix")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# ---- 1. install, and check the layout ------------------------------------------------------------
run("install" 0 out "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f "${BINDIR}/attnconf" "${INCLUDEDIR}/attnconf/backend.h"
          "${INCLUDEDIR}/attnconf/PROTOCOL.md" "${BACKENDDIR}/reference.so"
          "${CASESDIR}/FORMAT.md" "${DOCDIR}/SPEC.md" "${DOCDIR}/FORMAT.md" "${DOCDIR}/EXPECTED.md"
          "${DOCDIR}/examples/backend-template/mybackend.c" "${PYTHONDIR}/attnconf_exec.py"
          "${LIBDIR}/cmake/attnconf/attnconfConfig.cmake"
          "${LIBDIR}/cmake/attnconf/attnconfConfigVersion.cmake"
          "${LIBDIR}/cmake/attnconf/attnconfTests.cmake" "${LIBDIR}/pkgconfig/attnconf.pc")
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# The built-in backends only (reference, cpu): never a mutant, a test plugin or a third-party
# plugin.
file(GLOB backends RELATIVE "${prefix}/${BACKENDDIR}" "${prefix}/${BACKENDDIR}/*")
list(SORT backends)
if(NOT backends STREQUAL "cpu.so;reference.so")
  message(FATAL_ERROR "installed backends: '${backends}', expected cpu.so and reference.so")
endif()
file(GLOB_RECURSE stray "${prefix}/*mutant*" "${prefix}/*misbehave*")
if(stray)
  message(FATAL_ERROR "test-only files installed: ${stray}")
endif()
# The families the template project should register: every case directory installed.
file(GLOB fam_dirs LIST_DIRECTORIES true "${prefix}/${CASESDIR}/*")
set(families)
foreach(d IN LISTS fam_dirs)
  if(IS_DIRECTORY "${d}")
    get_filename_component(n "${d}" NAME)
    list(APPEND families "${n}")
  endif()
endforeach()
list(LENGTH families nfam)
if(nfam LESS 2)
  message(FATAL_ERROR "installed cases: ${nfam} families")
endif()

# ---- 2. the template as a separate project, against the installation only ------------------------
set(ex "${WORK}/template-build")
run("configure the template" 0 out "${CMAKE_COMMAND}" -S "${TEMPLATE_DIR}" -B "${ex}"
    -G "${GENERATOR}" "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    "-DCMAKE_PREFIX_PATH=${prefix}"
    "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror" -DCMAKE_BUILD_TYPE=RelWithDebInfo)
run("build the template" 0 out "${CMAKE_COMMAND}" --build "${ex}")
run("the template's ctest" 0 out "${CMAKE_CTEST_COMMAND}" --test-dir "${ex}" --no-tests=error
    --output-on-failure --parallel 4)
must_match("ctest" "${out}" "tests passed, 0 tests failed out of ${nfam}\n")
must_match("ctest" "${out}" "100% tests passed")
# f32 SDPA without a mask runs and passes; the mask builder (not implemented) is skipped.
must_match("ctest" "${out}" "attnconf\\.sdpa\\.nomask [.]+ +Passed")
must_match("ctest" "${out}" "attnconf\\.mask\\.causal [.]+\\*\\*\\*Skipped")
# The plugin exports the entry point and nothing else (hidden visibility, as the template says).
find_program(NM nm)
if(NM)
  run("nm the template" 0 out "${NM}" -D --defined-only "${ex}/mybackend.so")
  string(REGEX MATCHALL " [TtDdBbRrVvWw] [^ \n]+" syms "${out}")
  if(NOT syms STREQUAL " T attnconf_backend_entry")
    message(FATAL_ERROR "the template exports '${syms}', not only attnconf_backend_entry")
  endif()
endif()

# ---- 2b. attnconf_add_tests's arguments, in a second project ------------------------------------
set(args "${WORK}/args-project")
file(WRITE "${args}/expected.yaml" "attnconf_expected: 1\nbackend: mybackend\nversion: \"0.1.0\"
expect:\n  - case: [\"mask.*\", \"sdpa.nomask.*.f16\", \"sdpa.nomask.*.bf16\"]
    status: NOT_SUPPORTED\n    clause: 4\n    reason: \"no mask builder; f32 only\"\n")
# The same plus one status recorded wrongly on purpose: that run must fail, for that alone.
file(READ "${args}/expected.yaml" wrong)
file(WRITE "${args}/wrong.yaml" "${wrong}  - case: sdpa.nomask.basic.f32\n    status: FAIL
    clause: 2\n    reason: \"recorded wrongly on purpose\"\n")
# The template README's FILTER option, as a user copies it into a CMakeLists.txt.
file(READ "${TEMPLATE_DIR}/README.md" tpl_readme)
if(NOT tpl_readme MATCHES "Options: `(FILTER [^`]+)`")
  message(FATAL_ERROR "the template's README shows no `FILTER ...` option")
endif()
set(readme_filter "${CMAKE_MATCH_1}")
file(WRITE "${args}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.16)
project(args LANGUAGES C)
find_package(attnconf REQUIRED)
add_library(mb MODULE \"${TEMPLATE_DIR}/mybackend.c\")
set_target_properties(mb PROPERTIES PREFIX \"\")
target_link_libraries(mb PRIVATE attnconf::abi m)
enable_testing()
attnconf_add_tests(TARGET mb NAME f FILTER \"sdpa.caus?l\" \"sdpa.nomask\")
attnconf_add_tests(TARGET mb NAME x FILTER \"mask.causal\" sdpa.nomask EXPECTED expected.yaml)
attnconf_add_tests(TARGET mb NAME w FILTER sdpa.nomask EXPECTED wrong.yaml)
attnconf_add_tests(TARGET mb NAME o FILTER sdpa.nomask OPTIONS threads=2)
attnconf_add_tests(TARGET attnconf::reference NAME r FILTER mask.causal)
attnconf_add_tests(TARGET attnconf::reference NAME s FILTER mask.causal sdpa.nomask SHARDS 3)
attnconf_add_tests(TARGET attnconf::reference NAME i FILTER \"*.invalid\")
attnconf_add_tests(TARGET attnconf::reference NAME j FILTER \"*.invalid\" SHARDS 2)
attnconf_add_tests(TARGET mb NAME t ${readme_filter})
file(WRITE \"\${CMAKE_BINARY_DIR}/python_dir.txt\" \"\${attnconf_PYTHON_DIR}\")
")
run("configure the arguments project" 0 out "${CMAKE_COMMAND}" -S "${args}" -B "${args}/build"
    -G "${GENERATOR}" "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    "-DCMAKE_PREFIX_PATH=${prefix}")
run("build the arguments project" 0 out "${CMAKE_COMMAND}" --build "${args}/build")
# The README's FILTER has only to configure (t.*: the template's ctest ran those families).
execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${args}/build" --output-on-failure
                        --parallel 4 -E "^t\\."
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(out "${out}${err}")
message(STATUS "the arguments project's ctest: exit ${rc}\n${out}")
# FILTER picks families by glob; EXPECTED judges by the file (NOT_SUPPORTED recorded: passed,
# not skipped; a wrong record: failed); OPTIONS reach the harness (mybackend takes none: refused);
# the exported reference backend runs as a target too; SHARDS 3 registers three slices of the
# selected families instead of one test per family.
set(invalid ${families})
list(FILTER invalid INCLUDE REGEX "\\.invalid$")
list(LENGTH invalid ninvalid)
math(EXPR nargs "10 + ${ninvalid} + 2")
must_match("args" "${out}" " 2 tests failed out of ${nargs}\n")
foreach(t "f\\.sdpa\\.causal" "f\\.sdpa\\.nomask" "x\\.mask\\.causal" "x\\.sdpa\\.nomask"
          "r\\.mask\\.causal" "s\\.shard\\.0" "s\\.shard\\.1" "s\\.shard\\.2")
  must_match("args" "${out}" "${t} [.]+ +Passed")
endforeach()
must_match("args" "${out}" "w\\.sdpa\\.nomask [.]+\\*\\*\\*Failed")
must_match("args" "${out}" "wrong\\.yaml: [0-9]+ as expected, 1 unexpected")
must_match("args" "${out}" "o\\.sdpa\\.nomask [.]+\\*\\*\\*Failed")
must_match("args" "${out}" "threads")
if(out MATCHES "s\\.(mask|sdpa)\\.|s\\.shard\\.3")
  message(FATAL_ERROR "SHARDS 3 registered other tests than s.shard.0 .. s.shard.2")
endif()
# Each slice ran its own part of the selection, and together all of it: the three runs' case
# counts (their text output's header, "N cases (shard K/3 of M)") add up to M.
set(sum 0)
foreach(k 0 1 2)
  execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${args}/build" -R "^s\\.shard\\.${k}$"
                          -V RESULT_VARIABLE rc OUTPUT_VARIABLE sout ERROR_VARIABLE serr)
  if(NOT "${sout}${serr}" MATCHES "([0-9]+) cases? \\(shard ${k}/3 of ([0-9]+)\\)")
    message(FATAL_ERROR "s.shard.${k}: no shard header in its output:\n${sout}${serr}")
  endif()
  math(EXPR sum "${sum} + ${CMAKE_MATCH_1}")
  set(selected "${CMAKE_MATCH_2}")
endforeach()
if(NOT sum EQUAL selected OR sum LESS 3)
  message(FATAL_ERROR "the three slices ran ${sum} cases of ${selected} selected")
endif()
# SHARDS runs the cases of the families FILTER selects, as the tests per family do: the slices of
# FILTER "*.invalid" hold every case of i.mask.invalid, i.sdpa.invalid, ... once, and no case of
# another family whose ids have .invalid. inside (sdpa.edges.invalid.*, which "*.invalid.*" takes).
# The ids are the lines "STATUS   <id>" of the runs' text output.
foreach(p i j)
  execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${args}/build" -R "^${p}\\."
                          -V RESULT_VARIABLE rc OUTPUT_VARIABLE sout ERROR_VARIABLE serr)
  string(REGEX MATCHALL "[0-9]+: [A-Z_]+ +[a-z0-9_]+\\.[a-z0-9_.]+\n" lines "${sout}")
  set(ids_${p})
  foreach(l IN LISTS lines)
    string(REGEX REPLACE "^[0-9]+: [A-Z_]+ +([^\n]+)\n$" "\\1" id "${l}")
    list(APPEND ids_${p} "${id}")
  endforeach()
  list(SORT ids_${p})
  list(LENGTH ids_${p} n_${p})
  message(STATUS "FILTER \"*.invalid\", ${p}.*: ${n_${p}} cases")
endforeach()
set(once ${ids_j})
list(REMOVE_DUPLICATES once)
if(n_i LESS ninvalid OR NOT ids_j STREQUAL ids_i OR NOT once STREQUAL ids_j)
  set(extra ${ids_j})
  if(ids_i)
    list(REMOVE_ITEM extra ${ids_i})
  endif()
  message(FATAL_ERROR "FILTER \"*.invalid\": the shards ran ${n_j} cases, the tests per family "
                      "${n_i}; only in the shards: ${extra}")
endif()
file(READ "${args}/build/python_dir.txt" pydir)
if(NOT pydir STREQUAL "${prefix}/${PYTHONDIR}")
  message(FATAL_ERROR "attnconf_PYTHON_DIR is '${pydir}', expected '${prefix}/${PYTHONDIR}'")
endif()

# ---- 2c. the README's CMake project, and the plugin the ci-shards workflow runs -----------------
# Built as the README shows it (its ```cmake block, below a project() line) in <dir>/build, as
# the workflow builds it: the workflow's BACKEND must be the file that build leaves.
get_filename_component(src "${TEMPLATE_DIR}/../.." ABSOLUTE)
file(READ "${src}/README.md" readme)
if(NOT readme MATCHES "```cmake\n(find_package\\(attnconf REQUIRED\\)[^`]*)```")
  message(FATAL_ERROR "README.md shows no ```cmake block starting find_package(attnconf REQUIRED)")
endif()
set(snip "${WORK}/readme-project")
file(WRITE "${snip}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.16)
project(mybackend LANGUAGES C)
${CMAKE_MATCH_1}")
configure_file("${TEMPLATE_DIR}/mybackend.c" "${snip}/mybackend.c" COPYONLY)
file(READ "${src}/examples/ci-shards/attnconf-shards.yml" workflow)
if(NOT workflow MATCHES "\n  BACKEND: ([^ \n]+)")
  message(FATAL_ERROR "examples/ci-shards/attnconf-shards.yml sets no env BACKEND")
endif()
set(plugin "${CMAKE_MATCH_1}")
run("configure the README's project" 0 out "${CMAKE_COMMAND}" -S "${snip}" -B "${snip}/build"
    -G "${GENERATOR}" "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    "-DCMAKE_PREFIX_PATH=${prefix}")
run("build the README's project" 0 out "${CMAKE_COMMAND}" --build "${snip}/build")
if(NOT EXISTS "${snip}/${plugin}")
  file(GLOB_RECURSE built RELATIVE "${snip}" "${snip}/build/*.so")
  message(FATAL_ERROR "the workflow runs ${plugin}; the README's project built '${built}'")
endif()
run("backend-info of the README's plugin" 0 out "${prefix}/${BINDIR}/attnconf" backend-info
    --backend "${snip}/${plugin}")

# ---- 3. the README's compile line for those who do not use CMake -------------------------------
if(PKG_CONFIG)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig"
                          "${PKG_CONFIG}" --cflags attnconf
                  RESULT_VARIABLE rc OUTPUT_VARIABLE cflags OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags attnconf: exit ${rc}")
  endif()
  separate_arguments(cflags UNIX_COMMAND "${cflags}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig"
                          "${PKG_CONFIG}" --variable=pythondir attnconf
                  RESULT_VARIABLE rc OUTPUT_VARIABLE pcpy OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(REAL_PATH "${pcpy}" pcpy)
  file(REAL_PATH "${prefix}/${PYTHONDIR}" pywant)
  if(NOT rc EQUAL 0 OR NOT pcpy STREQUAL pywant)
    message(FATAL_ERROR "pkg-config --variable=pythondir attnconf: exit ${rc}, '${pcpy}', "
                        "expected '${pywant}'")
  endif()
  run("cc with pkg-config" 0 out "${C_COMPILER}" -std=c11 -O2 -Wall -Wextra -Werror -shared
      -fPIC ${cflags} -o "${WORK}/mybackend.so" "${TEMPLATE_DIR}/mybackend.c" -lm)
endif()

# ---- 4. the installed harness's defaults, after moving the whole prefix ---------------------------
set(moved "${WORK}/moved")
file(RENAME "${prefix}" "${moved}")
list(GET families 0 gone)
list(GET families 1 kept)
re_quote("${gone}" gone_re)
re_quote("${kept}" kept_re)
re_quote("${moved}/${BACKENDDIR}/reference.so" ref_re)
file(REMOVE_RECURSE "${moved}/${CASESDIR}/${gone}") # so the installed cases are told apart
run("installed list" 0 out "${moved}/${BINDIR}/attnconf" list)
must_match("list" "${out}" "(^|\n)${kept_re}\\.")
if(out MATCHES "(^|\n)${gone_re}\\.")
  message(FATAL_ERROR "the moved attnconf lists '${gone}': not its own installed cases")
endif()
run("installed backend-info" 0 out "${moved}/${BINDIR}/attnconf" backend-info --backend reference)
must_match("backend-info" "${out}" "path: ${ref_re}")
run("installed run" 0 out "${moved}/${BINDIR}/attnconf" run --backend reference
    --filter "${kept}.*")
# repro's writers serve the build tree's third-party plugins: installed, there is no table, and
# the message must not send the user to the build machine's source tree.
run("installed repro of a plugin" 1 out "${moved}/${BINDIR}/attnconf" repro --backend reference
    --case sdpa.causal.lq2_lk5.f16)
must_match("installed repro" "${out}" "reference: an installed attnconf has no writers table")
if(out MATCHES "writers.tsv")
  message(FATAL_ERROR "the moved attnconf's repro names a writers table: ${out}")
endif()
if(PKG_CONFIG)
  # One family is enough here: the template's ctest above ran them all.
  run("pkg-config-built template" 0 out "${moved}/${BINDIR}/attnconf" run
      --backend "${WORK}/mybackend.so" --cases "${moved}/${CASESDIR}/sdpa.causal"
      --filter "sdpa.causal.*")
endif()

# ---- 5. attnconf_exec.py from the moved installation, as an out-of-tree adapter uses it ---------
if(EXEC_PYTHON)
  set(pyd "${moved}/${PYTHONDIR}")
  # -I: neither PYTHONPATH, the working directory nor user site-packages can supply the module,
  # so it is the installed file or nothing; -B: nothing written into the installation.  (No ';'
  # in the code: run() passes its command on as a CMake list.)
  run("import the installed attnconf_exec" 0 out "${EXEC_PYTHON}" -I -B -c
      "import os, sys\nsys.path.insert(0, sys.argv[1])\nimport attnconf_exec as ax
sys.exit(0 if ax.PROTOCOL == 1 and os.path.dirname(ax.__file__) == sys.argv[1] else 3)" "${pyd}")
  # The PYTHONPATH spelling, through the installed harness: an adapter outside any attnconf tree.
  file(WRITE "${WORK}/outside_adapter.py" "import attnconf_exec as ax
class A:
    options = [ax.Option('mode', 'x', 'any text')]
    def open(self, options):
        return ax.Identity('outside-' + options['mode'], 'outside 1', ['f32'])
ax.serve(A())
")
  run("installed attnconf_exec under the installed harness" 0 out "${moved}/${BINDIR}/attnconf"
      backend-info --backend "exec:env PYTHONPATH=${pyd} ${EXEC_PYTHON} -B ${WORK}/outside_adapter.py"
      --backend-option mode=y)
  must_match("outside adapter" "${out}" "name: outside-y\nversion: outside 1\n")
  must_match("outside adapter" "${out}" "  mode \\(default: x\\): any text")
else()
  message(STATUS "no Python with numpy (ATTNCONF_EXEC_PYTHON): the installed attnconf_exec.py "
                 "is not imported")
endif()
file(REMOVE_RECURSE "${WORK}")
