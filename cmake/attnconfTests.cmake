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
# FILTER globs (*, ?) are matched against the family names, e.g. "sdpa.*".
#
# SHARDS n registers n tests instead, <prefix>.shard.0 .. <prefix>.shard.<n-1>, test k running
#   attnconf run --backend ... --cases DIR [--filter GLOB]... [--exclude GLOB]... --shard k/n [...]
# slice k of n of the selected cases (attnconf run --shard: disjoint slices, together every
# selected case, balanced by each case's estimated work), so `ctest -j n` or n CI jobs share the
# suite.  The slices hold exactly the cases the tests per family would run.  FILTER's globs
# cannot say that to the harness, which matches case ids: '*' spans dots there, so "*.invalid.*"
# would also take sdpa.edges.invalid.*.  The families are resolved here instead, and named by
# their ids' prefix "<family>.*", grouped by first component ("sdpa.*" when every sdpa.* family
# is selected, or "sdpa.*" less --exclude "<family>.*" for the few left out).  A family's prefix
# also begins the ids of a family named <family>.<more>, so FILTER must take or leave such nested
# families together (configure fails otherwise).  The harness takes 32 --filter, 32 --exclude
# and 255 characters of them in all: a selection too scattered for that fails with exit 2.
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

# Text as a glob (fnmatch) that matches only that text.
function(_attnconf_glob_quote text out)
  string(REGEX REPLACE "([][*?\\\\])" "\\\\\\1" q "${text}")
  set(${out} "${q}" PARENT_SCOPE)
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
  set(families)
  set(selected)
  foreach(dir IN LISTS dirs)
    file(GLOB yaml "${dir}/*.yaml")
    if(NOT IS_DIRECTORY "${dir}" OR NOT yaml)
      continue()
    endif()
    get_filename_component(family "${dir}" NAME)
    list(APPEND families "${family}")
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
    list(APPEND selected "${family}")
    if(shards)
      continue() # registered below, as slices of every selected family
    endif()
    _attnconf_glob_quote("${family}" fam_glob)
    add_test(NAME ${name}.${family}
             COMMAND "$<TARGET_FILE:attnconf::attnconf>" run
                     --backend "$<TARGET_FILE:${arg_TARGET}>" --cases "${dir}"
                     --filter "${fam_glob}.*" ${extra})
    set_tests_properties(${name}.${family} PROPERTIES SKIP_RETURN_CODE 77 LABELS attnconf)
  endforeach()
  if(added EQUAL 0)
    message(FATAL_ERROR "attnconf_add_tests: no case family in '${cases}' matches "
                        "FILTER '${arg_FILTER}'")
  endif()
  if(shards)
    _attnconf_shard_select("${families}" "${selected}" select)
    _attnconf_add_shards("${name}" "${arg_TARGET}" "${cases}" "${shards}" "${select}"
                         "${extra}")
  endif()
endfunction()

# The harness's selection of exactly the cases of the families `selected` (of `families`, every
# family of the cases tree), as --filter/--exclude arguments in `out`; none when all are selected.
# A case id is its family's name, a dot and more (cases/FORMAT.md), so "F.*" takes family F and
# only the families named F.<more>, whose ids cannot be told from F's.  Per first component K
# (the name up to its first dot), whichever takes fewer globs: "F.*" for each selected F, or
# "K.*" and --exclude "U.*" for each U left out.  An exclude cannot reach another group (its ids begin with
# another first component), nor a selected family of its own (nested names go together).
function(_attnconf_shard_select families selected out)
  set(args)
  if(NOT families STREQUAL selected)
    set(keys)
    foreach(f IN LISTS families)
      list(FIND selected "${f}" f_in)
      foreach(g IN LISTS families)
        string(FIND "${g}" "${f}." at)
        list(FIND selected "${g}" g_in)
        if(at EQUAL 0 AND ((f_in EQUAL -1 AND g_in GREATER -1) OR
                           (g_in EQUAL -1 AND f_in GREATER -1)))
          message(FATAL_ERROR "attnconf_add_tests: with SHARDS, FILTER must select both or "
                              "neither of the families '${f}' and '${g}': the harness selects "
                              "cases by id, and the ids of both begin with '${f}.'")
        endif()
      endforeach()
      string(REGEX REPLACE "\\..*" "" k "${f}")
      list(APPEND keys "${k}")
    endforeach()
    list(REMOVE_DUPLICATES keys)
    set(filters)
    set(excludes)
    foreach(k IN LISTS keys)
      set(in)
      set(left)
      foreach(f IN LISTS families)
        string(FIND "${f}." "${k}." at)
        if(NOT at EQUAL 0)
          continue()
        endif()
        _attnconf_glob_quote("${f}" q)
        list(FIND selected "${f}" f_in)
        if(f_in EQUAL -1)
          list(APPEND left "${q}.*")
        else()
          list(APPEND in "${q}.*")
        endif()
      endforeach()
      list(LENGTH in n_in)
      list(LENGTH left n_left)
      _attnconf_glob_quote("${k}" kq)
      if(n_in EQUAL 0)
        continue()
      elseif(n_left EQUAL 0)
        list(APPEND filters "${kq}.*")
      elseif(n_in GREATER n_left)
        list(APPEND filters "${kq}.*")
        list(APPEND excludes ${left})
      else()
        list(APPEND filters ${in})
      endif()
    endforeach()
    foreach(g IN LISTS filters)
      list(APPEND args --filter "${g}")
    endforeach()
    foreach(g IN LISTS excludes)
      list(APPEND args --exclude "${g}")
    endforeach()
  endif()
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

# The SHARDS form: n tests over the whole selection, one slice each.
function(_attnconf_add_shards name target cases shards select extra)
  math(EXPR last "${shards} - 1")
  foreach(k RANGE 0 ${last})
    add_test(NAME ${name}.shard.${k}
             COMMAND "$<TARGET_FILE:attnconf::attnconf>" run
                     --backend "$<TARGET_FILE:${target}>" --cases "${cases}" ${select}
                     --shard ${k}/${shards} ${extra})
    set_tests_properties(${name}.shard.${k} PROPERTIES SKIP_RETURN_CODE 77 LABELS attnconf)
  endforeach()
endfunction()
