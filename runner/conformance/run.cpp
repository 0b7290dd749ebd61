// `arch-bench conformance --mechanism ID --inputs DIR --outputs DIR`: run, compare, write.
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mechanisms/registry.hpp"
#include "core/backends/cuda/device_probe.hpp"
#include "runner/conformance/conformance.hpp"
#include "runner/conformance/on_cuda.hpp"
#include "core/checked_size.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/staged_folder.hpp"
#include "build_info.hpp"
#include "runner/conformance/npy_files.hpp"
#include "mechanisms/option_catalog.hpp"

namespace arch_bench {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

// max |a - b| / max |b| (as the harness's check() measures it); infinite when a holds a non-finite
// value, so a NaN never passes.
struct Difference {
  double max_abs = 0;
  double max_rel = 0;
  bool finite = true;
};

Difference difference(const NpyArray& a, const NpyArray& b) {
  if (a.shape != b.shape) {
    throw std::logic_error(fmt::format("conformance: comparing shapes {} and {}", shape_text(a.shape),
                                       shape_text(b.shape)));
  }
  Difference d;
  double max_ref = 0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (!std::isfinite(a.values[i])) d.finite = false;
    const double diff = std::fabs(a.values[i] - b.values[i]);
    d.max_abs = std::isnan(diff) ? INFINITY : std::fmax(d.max_abs, diff);
    max_ref = std::fmax(max_ref, std::fabs(b.values[i]));
  }
  if (!d.finite) d.max_abs = INFINITY;
  d.max_rel = max_ref > 0 ? d.max_abs / max_ref : d.max_abs;
  return d;
}

json file_json(const std::string& file, const NpyArray& array) {
  return {{"file", file}, {"shape", array.shape}, {"dtype", npy_descr(array.dtype)}};
}

// Adds the comparison of `a` against `b` to `entry` under `key`; returns whether it is within tolerance.
bool add_comparison(json& entry, const std::string& key, const NpyArray& a, const NpyArray& b, double tolerance) {
  const Difference d = difference(a, b);
  const bool ok = d.finite && d.max_rel <= tolerance;
  entry[key] = {{"max_rel_error", finite_or_null(d.max_rel)},
                {"max_abs_error", finite_or_null(d.max_abs)},
                {"finite", d.finite},
                {"within_tolerance", ok}};
  return ok;
}

// The output files must not exist (unless overwrite): checked before the run, under the folder's
// lock, so that bad input leaves nothing behind.
void check_existing_outputs(const fs::path& folder, const std::vector<std::string>& files, bool overwrite) {
  std::error_code error;
  if (!overwrite) {
    std::vector<std::string> existing;
    for (const std::string& file : files) {
      if (fs::exists(folder / file, error)) existing.push_back(file);
    }
    if (!existing.empty()) {
      throw UsageError(fmt::format("{} already holds {}; outputs are never overwritten: choose another --outputs "
                                   "folder (or pass --overwrite)",
                                   folder.string(), fmt::join(existing, ", ")));
    }
  }
}

// Bytes of the output files for these inputs (npy headers are small next to the 64 KiB margin).
std::int64_t output_bytes(const ConformanceSpec& spec, const ConformanceAxes& axes) {
  std::int64_t total = 64 * 1024;
  for (const ConformanceOutputSpec& output : spec.outputs) {
    std::int64_t elements = 1;
    for (const std::string& axis : output.axes) {
      const auto found = axes.find(axis);
      if (found != axes.end()) elements = checked_mul(elements, found->second);
    }
    total = checked_add(total, checked_mul(elements, output.dtype == NpyDtype::float64 ? 8 : 4));
  }
  return total;
}

std::string reference_name(const std::string& state) { return "reference_" + state; }

}  // namespace

std::vector<std::string> conformance_mechanisms() {
  std::vector<std::string> ids;
  for (const auto& mechanism : all_mechanisms()) {
    if (mechanism->conformance()) ids.push_back(mechanism->info().id);
  }
  return ids;
}

const ConformanceAdapter& find_conformance_adapter(const std::string& id) {
  const Mechanism* mechanism = find_mechanism(id);
  if (!mechanism) {
    std::vector<std::string> known;
    for (const auto& m : all_mechanisms()) known.push_back(m->info().id);
    throw UsageError(fmt::format("--mechanism: no mechanism named '{}' (known: {})", id, fmt::join(known, ", ")));
  }
  const ConformanceAdapter* adapter = mechanism->conformance();
  if (!adapter) {
    throw UsageError(fmt::format("--mechanism {}: this mechanism has no conformance adapter yet (mechanisms with "
                                 "one: {})",
                                 id, fmt::join(conformance_mechanisms(), ", ")));
  }
  return *adapter;
}

ConformanceResult run_conformance(const ConformanceRequest& request) {
  const ConformanceAdapter& adapter = find_conformance_adapter(request.mechanism);
  if (request.device != "cpu" && request.device != "cuda") {
    throw UsageError(fmt::format("--device {}: use cpu or cuda", request.device));
  }
  // The device first: without one the run stops here, with the probe's reason and nothing written.
  std::unique_ptr<Backend> cuda;
  if (request.device == "cuda") {
    const std::vector<std::string> with_kernels = cuda_conformance_mechanisms();
    const CudaProbe probe = probe_cuda();
    if (!probe.usable) throw UsageError(fmt::format("--device cuda: {}", probe.reason));
    if (std::find(with_kernels.begin(), with_kernels.end(), request.mechanism) == with_kernels.end()) {
      throw UsageError(fmt::format("--device cuda: {} has no CUDA kernels (those with: {})", request.mechanism,
                                   fmt::join(with_kernels, ", ")));
    }
    cuda = make_cuda_backend(0);
  }
  // The options it declares (the command refuses others given for it).
  const MechanismOptions options = declared_options_of(request.mechanism, request.options);
  const ConformanceSpec spec = adapter.spec(options);
  if (request.outputs.empty()) throw UsageError("--outputs is empty");
  const ConformanceInputs inputs = read_conformance_inputs(spec, request.inputs, request.mechanism);

  std::vector<std::string> output_files;
  for (const ConformanceOutputSpec& output : spec.outputs) output_files.push_back(output.name + ".npy");
  output_files.push_back(kConformanceManifest);
  std::size_t longest_name = 0;
  for (const std::string& file : output_files) longest_name = std::max(longest_name, file.size());
  check_output_folder(request.outputs, "--outputs", longest_name);
  check_free_space(request.outputs, "--outputs", output_bytes(spec, inputs.axes), "writing the outputs");
  // Locked from here to the last file, so that a second `conformance` into the same folder cannot
  // interleave its files with these; the set is staged and moved into place together.
  StagedFolder staged(request.outputs, "--outputs");
  check_existing_outputs(request.outputs, output_files, request.overwrite);

  ConformanceOutputs out = adapter.run(inputs, request.dtype, options);
  // On the GPU the kernel outputs are replaced by the CUDA kernels' (the reference stays).
  if (cuda) run_conformance_kernels_on_cuda(request.mechanism, inputs, request.dtype, out, *cuda);

  // What will be written, in order; every name must be one the spec announced (and checked above).
  std::vector<std::pair<std::string, const NpyArray*>> files = {
      {"prefill_out", &out.prefill_out}, {"decode_out", &out.decode_out}, {"reference_out", &out.reference_out}};
  for (const ConformanceState& state : out.states) {
    files.emplace_back(state.name, &state.value);
    if (state.reference) files.emplace_back(reference_name(state.name), &*state.reference);
  }
  for (const auto& [name, array] : files) {
    if (std::find(output_files.begin(), output_files.end(), name + ".npy") == output_files.end()) {
      throw std::logic_error(fmt::format("conformance adapter of {} wrote {}.npy, which its spec does not list",
                                         request.mechanism, name));
    }
  }

  const double tolerance = dtype_tolerance(request.dtype);
  json manifest;
  manifest["tool"] = fmt::format("arch-bench {}", build_info::tool_version);
  manifest["git_commit"] = build_info::git_commit;
  manifest["mechanism"] = request.mechanism;
  manifest["dtype"] = dtype_name(request.dtype);
  // Which kernels produced prefill_out, decode_out and the states.
  manifest["device"] = cuda ? json{{"backend", "cuda"}, {"gpu", cuda->facts()}} : json{{"backend", "cpu"}};
  manifest["options"] = out.options_json;
  manifest["tolerance"] = tolerance;
  manifest["axes"] = inputs.axes;
  json input_files = json::object();
  for (const ConformanceInputSpec& input : spec.inputs) {
    input_files[input.name] = file_json(input.name + ".npy", inputs.at(input.name));
    input_files[input.name]["axes"] = input.axes;
  }
  manifest["inputs_folder"] = fs::absolute(request.inputs).lexically_normal().string();
  manifest["inputs"] = input_files;

  bool passed = true;
  json prefill = file_json("prefill_out.npy", out.prefill_out);
  passed &= add_comparison(prefill, "vs_reference", out.prefill_out, out.reference_out, tolerance);
  json decode = file_json("decode_out.npy", out.decode_out);
  passed &= add_comparison(decode, "vs_reference", out.decode_out, out.reference_out, tolerance);
  const bool decode_matches = add_comparison(decode, "vs_prefill", out.decode_out, out.prefill_out, tolerance);
  passed &= decode_matches;
  manifest["prefill_out"] = prefill;
  manifest["decode_out"] = decode;
  manifest["reference_out"] = file_json("reference_out.npy", out.reference_out);
  manifest["max_rel_error"] = {{"prefill_out", prefill["vs_reference"]["max_rel_error"]},
                               {"decode_out", decode["vs_reference"]["max_rel_error"]}};
  manifest["decode_matches_prefill"] = decode_matches;

  json states = json::object();
  for (const ConformanceState& state : out.states) {
    json entry = file_json(state.name + ".npy", state.value);
    if (state.reference) {
      entry["reference_file"] = reference_name(state.name) + ".npy";
      passed &= add_comparison(entry, "vs_reference", state.value, *state.reference, tolerance);
    }
    if (state.decode_value) passed &= add_comparison(entry, "decode_vs_prefill", *state.decode_value, state.value, tolerance);
    states[state.name] = entry;
  }
  manifest["states"] = states;
  manifest["details"] = out.details;
  manifest["passed"] = passed;

  ConformanceResult result;
  for (const auto& [name, array] : files) write_npy(staged.stage(name + ".npy"), *array, /*overwrite=*/false);
  write_file_atomically(staged.stage(kConformanceManifest), manifest.dump(2) + "\n", /*overwrite=*/false);
  result.written = staged.commit(request.overwrite);
  result.manifest = std::move(manifest);
  result.passed = passed;
  return result;
}

}  // namespace arch_bench
