#pragma once
// Reports committed under results/ that the presentation tests (export, report) read as real input,
// named once so that a renamed result file is fixed in one place.
#include <filesystem>
#include <string>

namespace arch_bench::testing {

inline const std::filesystem::path kResults = std::filesystem::path(ARCH_BENCH_SOURCE_DIR) / "results";
inline const std::string kLinearReport = (kResults / "45_linear_recurrent_state_cpp-kernels-2core.json").string();
inline const std::string kPerformerReport = (kResults / "performer_favor_cpp-kernels-2core.json").string();

}  // namespace arch_bench::testing
