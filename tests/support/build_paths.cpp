#include "tests/support/build_paths.hpp"

namespace arch_bench::testing {

const char* executable_path() { return ARCH_BENCH_EXECUTABLE; }
const char* source_dir() { return ARCH_BENCH_SOURCE_DIR; }
const char* plugin_fixture_dir() { return ARCH_BENCH_TEST_PLUGIN_DIR; }

}  // namespace arch_bench::testing
