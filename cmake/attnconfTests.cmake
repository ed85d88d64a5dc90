# attnconfTests.cmake — attnconf_add_tests(): the attnconf suite as tests of the caller's ctest.
# Installed with the CMake package (lib/cmake/attnconf) and loaded by find_package(attnconf).
#
#   attnconf_add_tests(TARGET <module-target>
#                      [FILTER <glob>...]       # families to register (default: all)
#                      [EXPECTED <results-file>] # attnconf run --expect FILE
#                      [CASES <dir>]            # default: the installed golden cases
#                      [OPTIONS KEY=VALUE...]   # attnconf run --backend-option KEY=VALUE
#                      [NAME <prefix>]          # test names <prefix>.<family>; default attnconf
#                      [SHARDS <n>])            # n tests <prefix>.shard.<k> instead (below)
#
# Registers one test per case family (a directory of the cases tree, listed now, at configure
# time), named attnconf.<family>, that runs
#   attnconf run --backend $<TARGET_FILE:target> --cases DIR/<family> --filter '<family>.*'
#                [--expect FILE] [--backend-option KEY=VALUE]...
# (--cases names the family's directory so that each test reads only its own case files.)
# FILTER globs (*, ?) are matched against the family names, e.g. 'sdpa.*'.
#
# SHARDS n registers n tests instead, <prefix>.shard.0 .. <prefix>.shard.<n-1>, test k running
#   attnconf run --backend ... --cases DIR [--filter '<glob>.*']... --shard k/n [...]
# slice k of n of the selected cases (attnconf run --shard: disjoint slices, together every
# selected case, balanced by each case's estimated work), so `ctest -j n` or n CI jobs share the
# suite.  Each FILTER glob G then selects the case ids G.* (the cases of the families G matches).
#
# How the harness's exit status shows in ctest:
#   0   passed: every case passed or was correctly rejected (some may be NOT_SUPPORTED) -> Passed
#   77  every case of the family was NOT_SUPPORTED (the backend lacks a capability they need)
#       -> Skipped (SKIP_RETURN_CODE)
#   1   a FAIL, INCORRECT_DTYPE, ERROR, CRASH or TIMEOUT, or the backend did not load -> Failed
#   2   usage error (e.g. an unknown --backend-option key) -> Failed
#   3   a case file could not be read (the suite's problem) -> Failed
# With EXPECTED the run is judged against that file instead (attnconf run --expect): 0 when
# every status is the recorded one, 1 otherwise; a case the file does not name must PASS (or be
# correctly rejected), so NOT_SUPPORTED cases are recorded too (a glob such as "mask.*" covers
# a family), and there is no skip.
# The tests carry the label `attnconf` (ctest -L attnconf).
include_guard(GLOBAL)

# A shell glob as an anchored CMake regular expression.
function(_attnconf_glob_regex glob out)
  set(re "${glob}")
  foreach(c IN ITEMS "\\" "." "+" "^" "$" "(" ")" "{" "}" "|")
    string(REPLACE "${c}" "\\${c}" re "${re}")
  endforeach()
  string(REPLACE "*" ".*" re "${re}")
  string(REPLACE "?" "." re "${re}")
  set(${out} "^${re}$" PARENT_SCOPE)
endfunction()

function(attnconf_add_tests)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;EXPECTED;CASES;NAME;SHARDS" "FILTER;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attnconf_add_tests: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_TARGET)
    message(FATAL_ERROR "attnconf_add_tests: TARGET <module-target> is required")
  endif()
  if(NOT TARGET "${arg_TARGET}")
    message(FATAL_ERROR "attnconf_add_tests: TARGET ${arg_TARGET} is not a target")
  endif()
  if(NOT TARGET attnconf::attnconf)
    message(FATAL_ERROR "attnconf_add_tests: attnconf::attnconf is missing: "
                        "call find_package(attnconf) first")
  endif()
  if(DEFINED arg_SHARDS)
    if(NOT arg_SHARDS MATCHES "^[1-9][0-9]*$" OR arg_SHARDS GREATER 10000)
      message(FATAL_ERROR "attnconf_add_tests: SHARDS takes a number of shards from 1 to "
                          "10000, got '${arg_SHARDS}'")
    endif()
  endif()
  set(name attnconf)
  if(arg_NAME)
    set(name "${arg_NAME}")
  endif()
  set(cases "${attnconf_CASES_DIR}")
  if(arg_CASES)
    get_filename_component(cases "${arg_CASES}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  if(NOT IS_DIRECTORY "${cases}")
    message(FATAL_ERROR "attnconf_add_tests: no cases directory '${cases}'")
  endif()

  set(extra)
  if(arg_EXPECTED)
    get_filename_component(expected "${arg_EXPECTED}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${expected}")
      message(FATAL_ERROR "attnconf_add_tests: EXPECTED file '${expected}' does not exist")
    endif()
    list(APPEND extra --expect "${expected}")
  endif()
  foreach(kv IN LISTS arg_OPTIONS)
    if(NOT kv MATCHES "^[a-z0-9_.-]+=")
      message(FATAL_ERROR "attnconf_add_tests: OPTIONS takes KEY=VALUE, got '${kv}'")
    endif()
    list(APPEND extra --backend-option "${kv}")
  endforeach()
  set(regexes)
  foreach(glob IN LISTS arg_FILTER)
    _attnconf_glob_regex("${glob}" re)
    list(APPEND regexes "${re}")
  endforeach()

  # A family is a directory holding case files (cases/<family>/<id>.yaml).
  file(GLOB dirs LIST_DIRECTORIES true "${cases}/*")
  list(SORT dirs)
  set(added 0)
  set(shards "${arg_SHARDS}")
  foreach(dir IN LISTS dirs)
    file(GLOB yaml "${dir}/*.yaml")
    if(NOT IS_DIRECTORY "${dir}" OR NOT yaml)
      continue()
    endif()
    get_filename_component(family "${dir}" NAME)
    if(regexes)
      set(hit FALSE)
      foreach(re IN LISTS regexes)
        if(family MATCHES "${re}")
          set(hit TRUE)
        endif()
      endforeach()
      if(NOT hit)
        continue()
      endif()
    endif()
    math(EXPR added "${added} + 1")
    if(shards)
      continue() # registered below, as slices of every selected family
    endif()
    add_test(NAME ${name}.${family}
             COMMAND "$<TARGET_FILE:attnconf::attnconf>" run
                     --backend "$<TARGET_FILE:${arg_TARGET}>" --cases "${dir}"
                     --filter "${family}.*" ${extra})
    set_tests_properties(${name}.${family} PROPERTIES SKIP_RETURN_CODE 77 LABELS attnconf)
  endforeach()
  if(added EQUAL 0)
    message(FATAL_ERROR "attnconf_add_tests: no case family in '${cases}' matches "
                        "FILTER '${arg_FILTER}'")
  endif()
  if(shards)
    _attnconf_add_shards("${name}" "${arg_TARGET}" "${cases}" "${shards}" "${arg_FILTER}"
                         "${extra}")
  endif()
endfunction()

# The SHARDS form: n tests over the whole selection, one slice each.
function(_attnconf_add_shards name target cases shards filters extra)
  set(select)
  foreach(glob IN LISTS filters)
    list(APPEND select --filter "${glob}.*")
  endforeach()
  math(EXPR last "${shards} - 1")
  foreach(k RANGE 0 ${last})
    add_test(NAME ${name}.shard.${k}
             COMMAND "$<TARGET_FILE:attnconf::attnconf>" run
                     --backend "$<TARGET_FILE:${target}>" --cases "${cases}" ${select}
                     --shard ${k}/${shards} ${extra})
    set_tests_properties(${name}.shard.${k} PROPERTIES SKIP_RETURN_CODE 77 LABELS attnconf)
  endforeach()
endfunction()
