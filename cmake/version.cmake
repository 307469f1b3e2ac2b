# The build's version: the including project's VERSION and the git commit at configure time, in
# walklist/version.h (target walklist_version). Included by the top-level CMakeLists.txt, and by
# src/scanner/CMakeLists.txt when that is built alone, so that walklist-scanner says the same.
# A commit made after configuring shows once cmake runs again (a fresh build directory, or
# `cmake -S . -B build`); a source tree without git (a tarball, the Docker build) says "unknown".
set(WL_COMMIT_OVERRIDE "" CACHE STRING "The commit to report when the tree has no .git (Docker)")
set(WL_GIT_COMMIT unknown)
find_program(WL_GIT git)
if(WL_COMMIT_OVERRIDE MATCHES "^[0-9a-f]+$")
  set(WL_GIT_COMMIT ${WL_COMMIT_OVERRIDE})
elseif(WL_GIT)
  execute_process(COMMAND ${WL_GIT} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}
                  OUTPUT_VARIABLE WL_GIT_HEAD OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE WL_GIT_RESULT ERROR_QUIET)
  if(WL_GIT_RESULT EQUAL 0 AND WL_GIT_HEAD MATCHES "^[0-9a-f]+$")
    set(WL_GIT_COMMIT ${WL_GIT_HEAD})
  endif()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.h.in
               ${CMAKE_BINARY_DIR}/gen-version/walklist/version.h @ONLY)
add_library(walklist_version INTERFACE)
target_include_directories(walklist_version INTERFACE ${CMAKE_BINARY_DIR}/gen-version)
