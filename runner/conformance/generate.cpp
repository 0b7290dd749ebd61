// `arch-bench conformance --generate DIR`: seeded inputs in a mechanism's layout.
#include <fmt/format.h>

#include "core/checked_size.hpp"
#include "mechanisms/registry.hpp"
#include "runner/conformance/conformance.hpp"
#include "runner/preflight/memory_room.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/staged_folder.hpp"
#include "runner/conformance/npy_files.hpp"
#include "mechanisms/option_catalog.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {

std::string shape_options(const ConformanceShape& shape) {
  return fmt::format("--batch {} --heads {} --length {} --dim {}", shape.batch, shape.heads, shape.length, shape.dim);
}

// What one mechanism is handed: the options it (or the harness) declares. A --generate for every
// mechanism gives each its own (--features sizes performer's W, not retnet's inputs); the command
// refuses an option the one mechanism it names does not take.
MechanismOptions options_for(const std::string& id, const MechanismOptions& options) {
  return declared_options_of(id, options);
}

// The limits a run applies (Mechanism::unsupported) apply to what --generate writes for it: a
// folder of inputs that every run then refuses helps nobody. A reason that a tiny shape with the
// same options gets too is not about the sizes (an empty --feature-map means the mechanism's
// default, which the adapter resolves); the adapter checks those options itself.
void check_mechanism_limits(const std::string& id, const ConformanceShape& shape, const MechanismOptions& options,
                            DType dtype) {
  const Mechanism* mechanism = find_mechanism(id);
  if (mechanism == nullptr) return;  // find_conformance_adapter named it
  const auto why = mechanism->unsupported(generated_cell(shape, options, dtype));
  if (!why) return;
  // The same options with every integer option at its least: a reason that stays is not about sizes.
  MechanismOptions tiny_options = options;
  for (const OptionSpec& spec : mechanism->option_specs()) {
    if (spec.type == OptionType::integer && spec.minimum) {
      tiny_options.set(spec.key, static_cast<std::int64_t>(*spec.minimum));
    }
  }
  if (mechanism->unsupported(generated_cell(ConformanceShape{1, 1, 1, 1}, tiny_options, dtype))) return;
  throw UsageError(fmt::format("--generate for {}: {} ({}); a run would refuse these inputs, so none are written{}",
                               id, *why, shape_options(shape),
                               options.empty() ? "" : "; give --mechanism to generate for one mechanism"));
}

struct GeneratedSize {
  std::int64_t elements = 0;
  std::vector<std::string> files;  // "q.npy", ...
};

// Elements of every input file --generate would write, computed with overflow checks before
// anything is drawn (the draw holds each value as a double, plus float staging).
GeneratedSize generated_size(const std::vector<std::string>& mechanisms, const ConformanceShape& shape,
                             const MechanismOptions& options) {
  checked_mul(shape.heads, shape.dim);  // d_inner, before generated_axes multiplies them unchecked
  const ConformanceAxes axes = ConformanceAdapter::generated_axes(shape, options);
  std::map<std::string, std::int64_t> files;
  for (const std::string& id : mechanisms) {
    for (const ConformanceInputSpec& input : find_conformance_adapter(id).spec(options_for(id, options)).inputs) {
      std::int64_t elements = 1;
      for (const std::string& axis : input.axes) {
        const auto found = axes.find(axis);
        if (found != axes.end()) elements = checked_mul(elements, found->second);
      }
      files[input.name] = elements;
    }
  }
  GeneratedSize size;
  for (const auto& [name, elements] : files) size.elements = checked_add(size.elements, elements);
  for (const auto& [name, elements] : files) size.files.push_back(name + ".npy");
  return size;
}

}  // namespace

std::vector<fs::path> generate_conformance_inputs(const GenerateRequest& request) {
  if (request.folder.empty()) throw UsageError("--generate: the folder is empty");
  const ConformanceShape& shape = request.shape;
  for (const auto& [name, value] : {std::pair{"--batch", shape.batch}, std::pair{"--heads", shape.heads},
                                    std::pair{"--length", shape.length}, std::pair{"--dim", shape.dim}}) {
    if (value < 1) throw UsageError(fmt::format("{} must be at least 1, got {}", name, value));
  }
  const std::vector<std::string> mechanisms =
      request.mechanism.empty() ? conformance_mechanisms() : std::vector<std::string>{request.mechanism};

  // Sizes first: nothing is allocated for a shape that cannot be held or written.
  GeneratedSize size;
  try {
    size = generated_size(mechanisms, shape, request.options);
    checked_mul(size.elements, 16);
  } catch (const SizeOverflow&) {
    throw UsageError(fmt::format("--generate with {}: the inputs would need more than 2^63 bytes; reduce --length, "
                                 "--batch, --heads or --dim",
                                 shape_options(shape)));
  }
  // Each value is held as a double while the set is drawn, plus float staging and one file's encoding.
  const std::int64_t memory = size.elements * 16;
  const std::int64_t disk = size.elements * 4 + static_cast<std::int64_t>(size.files.size()) * 128;
  // The tightest of MemAvailable and the cgroup's room, as `run` checks (runner/preflight/memory_room.hpp).
  const std::optional<MemoryLimit> available = read_memory_room().tightest();
  if (memory > kMaxAddressableBytes || (available && memory > available->room_bytes)) {
    throw UsageError(fmt::format("--generate with {}: the inputs would need about {} of memory to draw{}; reduce "
                                 "--length, --batch, --heads or --dim",
                                 shape_options(shape), bytes_text(memory),
                                 available ? fmt::format(" and this machine has {} available ({})",
                                                         bytes_text(available->room_bytes), available->source)
                                           : std::string()));
  }
  for (const std::string& id : mechanisms) {
    check_mechanism_limits(id, shape, options_for(id, request.options), request.dtype);
  }
  check_output_folder(request.folder, "--generate", 32);
  check_free_space(request.folder, "--generate", disk + 64 * 1024, "writing the inputs");

  // Locked and staged: a full disk or a signal leaves no partial set, and a second writer of the
  // folder is refused.
  StagedFolder staged(request.folder, "--generate");
  std::error_code error;
  std::vector<std::string> existing;
  for (const std::string& file : size.files) {
    if (fs::exists(request.folder / file, error)) existing.push_back(file);
  }
  if (!existing.empty()) {
    throw UsageError(fmt::format("{} already holds {}; --generate never replaces input files: choose an empty folder",
                                 request.folder.string(), fmt::join(existing, ", ")));
  }

  // The union of the mechanisms' inputs; an input two mechanisms share (q, k, v) is drawn once.
  std::map<std::string, NpyArray> tensors;
  for (const std::string& id : mechanisms) {
    const ConformanceAdapter& adapter = find_conformance_adapter(id);
    for (auto& [name, array] : adapter.generate(shape, options_for(id, request.options), request.seed, request.dtype)) {
      const auto found = tensors.find(name);
      if (found == tensors.end()) {
        tensors.emplace(name, std::move(array));
      } else if (found->second.shape != array.shape) {
        throw std::logic_error(fmt::format("conformance inputs: {} has shape {} for one mechanism and {} for {}", name,
                                           shape_text(found->second.shape), shape_text(array.shape), id));
      }
    }
  }

  for (auto& [name, array] : tensors) {
    array.dtype = NpyDtype::float32;
    write_npy(staged.stage(name + ".npy"), array, /*overwrite=*/false);
  }
  return staged.commit(/*overwrite=*/false);
}

}  // namespace arch_bench
