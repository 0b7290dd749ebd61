# Writes the commit the build comes from into OUTPUT (a C++ file), at every build, touching the file
# only when the commit or the tree's modified state changed: a report must name the commit of the
# binary that wrote it, not the one CMake last configured at.
# Run as: cmake -DSOURCE_DIR=... -DOUTPUT=... [-DGIT=...] -P GitStamp.cmake
set(_commit "unknown")
set(_modified "false")
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT}" rev-parse HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE _head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0)
    set(_commit "${_head}")
    # Tracked files only: build folders and results inside the tree do not make the source modified.
    execute_process(COMMAND "${GIT}" status --porcelain --untracked-files=no WORKING_DIRECTORY "${SOURCE_DIR}"
                    OUTPUT_VARIABLE _changes ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND NOT _changes STREQUAL "")
      set(_modified "true")
    endif()
  endif()
endif()
set(_text "// Generated at build time by cmake/GitStamp.cmake; do not edit.
#include \"build_info.hpp\"
namespace arch_bench::build_info {
const char* const git_commit = \"${_commit}\";
const bool git_tree_modified = ${_modified};
}  // namespace arch_bench::build_info
")
set(_existing "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" _existing)
endif()
if(NOT _existing STREQUAL _text)
  file(WRITE "${OUTPUT}" "${_text}")
endif()
