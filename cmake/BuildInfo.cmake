# Build facts that a report must carry so a file is self-describing years later.
find_package(Git QUIET)
set(ARCH_BENCH_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_info.hpp.in
               ${ARCH_BENCH_GENERATED_DIR}/build_info.hpp @ONLY)
# The source tree's path, in a file of its own (see build_info.hpp.in); arch_bench_core compiles it.
set(ARCH_BENCH_BUILD_INFO_PATHS ${ARCH_BENCH_GENERATED_DIR}/build_info_paths.cpp)
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_info_paths.cpp.in ${ARCH_BENCH_BUILD_INFO_PATHS} @ONLY)
# The commit is stamped at build time, not here: a rebuild after a commit must not report the
# commit of the last configure. The stamp runs at every build and rewrites git_commit.cpp only when
# the commit or the tree's modified state changed, so an unchanged tree recompiles nothing.
set(ARCH_BENCH_GIT_STAMP ${ARCH_BENCH_GENERATED_DIR}/git_commit.cpp)
set(_git_stamp_command ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${ARCH_BENCH_GIT_STAMP}
                       -DGIT=${GIT_EXECUTABLE} -P ${PROJECT_SOURCE_DIR}/cmake/GitStamp.cmake)
execute_process(COMMAND ${_git_stamp_command})
add_custom_target(arch_bench_git_stamp COMMAND ${_git_stamp_command} BYPRODUCTS ${ARCH_BENCH_GIT_STAMP}
                  COMMENT "Stamping the git commit" VERBATIM)
