#pragma once
// Where this build's arch-bench, source tree and plugin fixtures are. Defined in build_paths.cpp, the
// only test file compiled with these paths: were they macros on every test file's command line, each
// clone or worktree (CI's fresh clone, a helper's worktree) would miss ccache for the whole suite.

namespace arch_bench::testing {

const char* executable_path();      // the arch-bench binary the CLI tests run
const char* source_dir();           // the source tree (profiles/, results/, scripts/)
const char* plugin_fixture_dir();   // where the plugin fixtures (tests/plugins/) were built

}  // namespace arch_bench::testing
