#pragma once
// `arch-bench conformance`: runs a mechanism's CPU kernels and fp64 reference on inputs read from
// .npy files and writes the outputs and final states as .npy, so that someone porting the
// mechanism to another framework can check that theirs computes the same function.
//
// Data flow: read_conformance_inputs (files -> checked tensors with bound axes) -> the mechanism's
// adapter (prefill, decode token by token, reference) -> compare -> write the .npy outputs, then
// conformance.json (the manifest). Bad input is a UsageError thrown before anything is written.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mechanisms/mechanism.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

inline constexpr const char* kConformanceManifest = "conformance.json";

// The mechanism's adapter; throws UsageError for an unknown id or a mechanism without one.
const ConformanceAdapter& find_conformance_adapter(const std::string& mechanism);
// Ids of the registered mechanisms that have an adapter, in registry order.
std::vector<std::string> conformance_mechanisms();

// Reads <folder>/<name>.npy for every input of `spec`, checks each file's dimensions against its
// named axes and binds every axis to one size. Throws UsageError naming the file(s) at fault:
// missing files (all of them at once), bad files (npy.hpp), a wrong number of dimensions, an axis
// of size 0, two files that disagree on an axis, a value that is not finite.
ConformanceInputs read_conformance_inputs(const ConformanceSpec& spec, const std::filesystem::path& folder,
                                          const std::string& mechanism);

struct ConformanceRequest {
  std::string mechanism;
  std::filesystem::path inputs;
  std::filesystem::path outputs;
  DType dtype = DType::float32;
  MechanismOptions options;  // the options given, by key; an absent one is the mechanism's default
  bool overwrite = false;    // replace existing output files
  // "cpu" (the CPU kernels) or "cuda" (the GPU kernels, on_cuda.hpp; the fp64 reference is the same).
  std::string device = "cpu";
};

struct ConformanceResult {
  nlohmann::json manifest;  // what conformance.json holds
  bool passed = false;      // every comparison within the dtype tolerance, every output finite
  std::vector<std::filesystem::path> written;
};

// Reads, runs, compares and writes (each file atomically; never over an existing file unless
// request.overwrite). Throws UsageError, with nothing written, for bad input, and for --device cuda
// without a usable device (the probe's reason) or for a mechanism without CUDA kernels.
ConformanceResult run_conformance(const ConformanceRequest& request);

struct GenerateRequest {
  std::filesystem::path folder;
  std::string mechanism;  // empty: the union of every adapter's inputs
  ConformanceShape shape;
  MechanismOptions options;  // the options given, by key; an absent one is the mechanism's default
  std::uint64_t seed = 0;
  DType dtype = DType::float32;  // sequence inputs are rounded through it
};

// Writes seeded inputs as '<f4' .npy files; never replaces a file (UsageError, nothing written).
// Returns the files written.
std::vector<std::filesystem::path> generate_conformance_inputs(const GenerateRequest& request);

// The file layout of one mechanism (or of every one with an adapter, when `mechanism` is empty)
// as Markdown: for docs/user-guide.md and `arch-bench conformance --describe`.
std::string describe_conformance_layout(const std::string& mechanism, const MechanismOptions& options);

}  // namespace arch_bench
