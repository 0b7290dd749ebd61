# Build facts that a report must carry so a file is self-describing years later.
find_package(Git QUIET)
set(ARCH_BENCH_GIT_COMMIT "unknown")
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE ARCH_BENCH_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _git_rc)
  if(NOT _git_rc EQUAL 0)
    set(ARCH_BENCH_GIT_COMMIT "unknown")
  endif()
endif()
set(ARCH_BENCH_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_info.hpp.in
               ${ARCH_BENCH_GENERATED_DIR}/build_info.hpp @ONLY)
