# install.cmake — what `cmake --install` puts where, the CMake package (find_package(attnconf))
# and the pkg-config file.  Included once from the top-level CMakeLists.txt, after the targets.
#
# Layout under the prefix (GNUInstallDirs; lib may be lib64 or lib/<multiarch>):
#   bin/attnconf                            the harness
#   include/attnconf/backend.h, PROTOCOL.md the plugin ABI and the exec-adapter protocol
#   lib/attnconf/backends/reference.so      the reference backend (`--backend reference`)
#   lib/attnconf/backends/cpu.so            the fast CPU backend (`--backend cpu`)
#   lib/cmake/attnconf/                     attnconfConfig.cmake (+ Version, Targets, Tests)
#   lib/pkgconfig/attnconf.pc               Cflags for <attnconf/backend.h>
#   share/attnconf/cases/                   the golden cases (<family>/<id>.yaml, FORMAT.md)
#   share/attnconf/python/attnconf_exec.py  the exec-protocol module for Python adapters
#   share/doc/attnconf/                     SPEC.md, FORMAT.md, EXPECTED.md, examples/backend-template/
# The installed attnconf finds its backends and cases relative to its own location
# (conformance/harness/common/include/common/locate.h), so the tree works at any prefix and can be moved whole.
# Never installed: the test-only mutants, the test plugins, and the third-party plugins (they
# are built against the build tree's Python environment).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNCONF_INSTALL_BACKENDDIR "${CMAKE_INSTALL_LIBDIR}/attnconf/backends")
set(ATTNCONF_INSTALL_CASESDIR "${CMAKE_INSTALL_DATADIR}/attnconf/cases")
# Not site-packages: the module belongs to this installation (its protocol version is the
# harness's), and an adapter names the directory (attnconf_PYTHON_DIR, pkg-config pythondir).
set(ATTNCONF_INSTALL_PYTHONDIR "${CMAKE_INSTALL_DATADIR}/attnconf/python")
set(ATTNCONF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/attnconf")
set(ATTNCONF_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# _attnconf_rel(OUT FROM TO): install directory TO as seen from directory FROM (both relative
# to the prefix, as GNUInstallDirs gives them), so the installation stays relocatable.  An
# absolute directory (a user's -DCMAKE_INSTALL_LIBDIR=/abs) can only be named absolutely.
function(_attnconf_rel out from to)
  if(IS_ABSOLUTE "${to}")
    set(${out} "${to}" PARENT_SCOPE)
  elseif(IS_ABSOLUTE "${from}")
    set(${out} "${CMAKE_INSTALL_PREFIX}/${to}" PARENT_SCOPE)
  else()
    file(RELATIVE_PATH rel "/prefix/${from}" "/prefix/${to}")
    string(REGEX REPLACE "(.)/$" "\\1" rel "${rel}") # "../../" -> "../.."
    if(rel STREQUAL "")
      set(rel ".")
    endif()
    set(${out} "${rel}" PARENT_SCOPE)
  endif()
endfunction()

# ---- the harness's default directories once installed (harness/common/locate.c) ---------------
_attnconf_rel(rel_backends "${CMAKE_INSTALL_BINDIR}" "${ATTNCONF_INSTALL_BACKENDDIR}")
_attnconf_rel(rel_cases "${CMAKE_INSTALL_BINDIR}" "${ATTNCONF_INSTALL_CASESDIR}")
target_compile_definitions(harness_common PRIVATE
  ATTNCONF_INSTALL_BACKEND_REL="${rel_backends}"
  ATTNCONF_INSTALL_CASES_REL="${rel_cases}")

# ---- attnconf::abi: the ABI header as a target (also usable in this tree) ----------------------
add_library(attnconf_abi INTERFACE)
add_library(attnconf::abi ALIAS attnconf_abi)
target_include_directories(attnconf_abi INTERFACE
  "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/conformance/include>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
set_target_properties(attnconf_abi PROPERTIES EXPORT_NAME abi)

# ---- files --------------------------------------------------------------------------------------
install(TARGETS attnconf_abi attnconf EXPORT attnconfTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(TARGETS reference cpu EXPORT attnconfTargets
  LIBRARY DESTINATION "${ATTNCONF_INSTALL_BACKENDDIR}")
install(FILES conformance/include/attnconf/backend.h conformance/include/attnconf/PROTOCOL.md
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/attnconf")
# The case files and their format only: a stray file in the tree is never shipped.
install(DIRECTORY "${ATTNCONF_CASES_DIR}/" DESTINATION "${ATTNCONF_INSTALL_CASESDIR}"
  FILES_MATCHING PATTERN "*.yaml" PATTERN "FORMAT.md")
install(FILES SPEC.md cases/FORMAT.md conformance/expected/EXPECTED.md DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(FILES conformance/adapters/attnconf_exec.py DESTINATION "${ATTNCONF_INSTALL_PYTHONDIR}")
install(DIRECTORY examples/backend-template DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples"
  PATTERN "build" EXCLUDE)

# ---- CMake package ------------------------------------------------------------------------------
install(EXPORT attnconfTargets NAMESPACE attnconf:: DESTINATION "${ATTNCONF_INSTALL_CMAKEDIR}")
configure_package_config_file(cmake/attnconfConfig.cmake.in
  "${PROJECT_BINARY_DIR}/package/attnconfConfig.cmake"
  INSTALL_DESTINATION "${ATTNCONF_INSTALL_CMAKEDIR}"
  PATH_VARS ATTNCONF_INSTALL_CASESDIR ATTNCONF_INSTALL_BACKENDDIR CMAKE_INSTALL_DOCDIR
            ATTNCONF_INSTALL_PYTHONDIR)
# 0.x: a new minor version may change the case format or the function, so only the same
# major.minor matches (the plugin ABI has its own version check, ATTNCONF_ABI_VERSION).
write_basic_package_version_file("${PROJECT_BINARY_DIR}/package/attnconfConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/package/attnconfConfig.cmake"
              "${PROJECT_BINARY_DIR}/package/attnconfConfigVersion.cmake"
              cmake/attnconfTests.cmake
  DESTINATION "${ATTNCONF_INSTALL_CMAKEDIR}")

# ---- pkg-config ---------------------------------------------------------------------------------
_attnconf_rel(ATTNCONF_PC_PREFIX_REL "${ATTNCONF_INSTALL_PKGCONFIGDIR}" ".")
foreach(var IN ITEMS INCLUDEDIR BINDIR CASESDIR BACKENDDIR PYTHONDIR)
  if(var MATCHES "^(CASES|BACKEND|PYTHON)DIR$")
    set(dir "${ATTNCONF_INSTALL_${var}}")
  else()
    set(dir "${CMAKE_INSTALL_${var}}")
  endif()
  if(IS_ABSOLUTE "${dir}")
    set(ATTNCONF_PC_${var} "${dir}")
  else()
    set(ATTNCONF_PC_${var} "\${prefix}/${dir}")
  endif()
endforeach()
configure_file(cmake/attnconf.pc.in "${PROJECT_BINARY_DIR}/package/attnconf.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/package/attnconf.pc"
  DESTINATION "${ATTNCONF_INSTALL_PKGCONFIGDIR}")

# ---- proof: install, then build and test the backend template against the installation ---------
if(ATTNCONF_BUILD_TESTS)
  add_test(NAME install.backend_template
    COMMAND "${CMAKE_COMMAND}"
            "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
            "-DTEMPLATE_DIR=${PROJECT_SOURCE_DIR}/examples/backend-template"
            "-DWORK=${PROJECT_BINARY_DIR}/install-test"
            "-DGENERATOR=${CMAKE_GENERATOR}"
            "-DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}"
            "-DC_COMPILER=${CMAKE_C_COMPILER}"
            "-DPKG_CONFIG=${PKG_CONFIG_EXECUTABLE}"
            "-DBINDIR=${CMAKE_INSTALL_BINDIR}"
            "-DLIBDIR=${CMAKE_INSTALL_LIBDIR}"
            "-DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR}"
            "-DCASESDIR=${ATTNCONF_INSTALL_CASESDIR}"
            "-DBACKENDDIR=${ATTNCONF_INSTALL_BACKENDDIR}"
            "-DDOCDIR=${CMAKE_INSTALL_DOCDIR}"
            "-DPYTHONDIR=${ATTNCONF_INSTALL_PYTHONDIR}"
            "-DEXEC_PYTHON=${ATTNCONF_EXEC_PYTHON}"
            -P "${PROJECT_SOURCE_DIR}/cmake/install_test.cmake")
  set_tests_properties(install.backend_template PROPERTIES LABELS "install" TIMEOUT 300)
endif()
