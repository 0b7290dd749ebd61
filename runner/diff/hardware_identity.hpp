#pragma once
// Which machine a report was measured on, and whether two reports were measured on the same one.
// `diff` (runner/cli/diff_command.cpp) and `merge` (runner/shard/merge.cpp) both ask: a timing
// verdict, or a decision over rows from several shards, compares machines as much as kernels when
// the hardware differs, so both refuse unless told otherwise (issue 42).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

// One way two reports' hardware differs. `field` is the report field ("hardware.backend",
// "hardware.host.cpu_model", "hardware.gpu.name", "hardware.ceilings.peak_gflops"); the values are
// shown as recorded ("(none)" where a report has no GPU or no such field).
struct HardwareDifference {
  std::string field;
  std::string first_value, second_value;
  std::string message;  // "hardware.host.cpu_model differs: 'AMD EPYC' in a.json vs 'Intel Xeon' in b.json"
};

// The machine's identity: backend (cpu / cuda), the host's CPU model and every GPU's name. With
// `ceiling_tolerance` (a fraction, e.g. 0.25), also each measured ceiling (memory read and triad
// bandwidth, peak FLOP/s, device copy, bf16 GEMM) present in both reports, when the larger is more
// than 1 + tolerance times the smaller: the same CPU model can sit behind very different memory
// systems (a shared cloud host, a node with half its channels). Identity fields missing on both
// sides agree; missing on one side only is a difference (a report cannot drop a field to pass).
// Safe on any JSON shape (fuzzed): a field that is not where the schema puts it reads as "(none)".
std::vector<HardwareDifference> hardware_differences(const nlohmann::json& first, const std::string& first_file,
                                                     const nlohmann::json& second, const std::string& second_file,
                                                     std::optional<double> ceiling_tolerance = std::nullopt);

}  // namespace arch_bench
