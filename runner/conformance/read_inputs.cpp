// Input files -> checked tensors: the first step of `arch-bench conformance`.
#include <cmath>

#include <fmt/format.h>

#include "runner/conformance/conformance.hpp"
#include "runner/conformance/npy_files.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

namespace {

std::string axes_text(const std::vector<std::string>& axes) { return fmt::format("[{}]", fmt::join(axes, ", ")); }

std::string file_of(const std::string& name) { return name + ".npy"; }

// "(0, 3, 17)": the C-order index of flat element `flat` in `shape`.
std::string index_text(const std::vector<std::int64_t>& shape, std::int64_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_text(index);
}

// Where an axis got its size: the first file that has it.
struct Binding {
  std::int64_t size;
  std::string file;
  std::vector<std::int64_t> shape;
  std::vector<std::string> axes;
};

}  // namespace

ConformanceInputs read_conformance_inputs(const ConformanceSpec& spec, const fs::path& folder,
                                          const std::string& mechanism) {
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    throw UsageError(fmt::format("--inputs {} is not a folder; write inputs there with `arch-bench conformance "
                                 "--generate {} --mechanism {}`",
                                 folder.string(), folder.string(), mechanism));
  }
  std::vector<std::string> missing;
  for (const ConformanceInputSpec& input : spec.inputs) {
    if (!fs::exists(folder / file_of(input.name), error)) {
      missing.push_back(fmt::format("{} {}", file_of(input.name), axes_text(input.axes)));
    }
  }
  if (!missing.empty()) {
    throw UsageError(fmt::format("{}: missing input file(s) for {}: {} (see `arch-bench conformance --describe "
                                 "--mechanism {}`)",
                                 folder.string(), mechanism, fmt::join(missing, ", "), mechanism));
  }

  ConformanceInputs inputs;
  std::map<std::string, Binding> bindings;
  for (const ConformanceInputSpec& input : spec.inputs) {
    const fs::path path = folder / file_of(input.name);
    NpyArray array = read_npy(path);
    if (array.shape.size() != input.axes.size()) {
      throw UsageError(fmt::format("{}: shape {} has {} dimension(s); {} expects {}: {}", path.string(),
                                   shape_text(array.shape), array.shape.size(), mechanism, input.axes.size(),
                                   axes_text(input.axes)));
    }
    for (std::size_t d = 0; d < input.axes.size(); ++d) {
      const std::string& axis = input.axes[d];
      const std::int64_t size = array.shape[d];
      if (size < 1) {
        throw UsageError(fmt::format("{}: {} (dimension {} of shape {}) is 0; every axis must be at least 1",
                                     path.string(), axis, d, shape_text(array.shape)));
      }
      const auto [found, inserted] = bindings.try_emplace(axis, Binding{size, file_of(input.name), array.shape, input.axes});
      const Binding& first = found->second;
      if (!inserted && first.size != size) {
        throw UsageError(fmt::format("{} and {} disagree on {}: {} has {} = {} (shape {} read as {}), {} has {} = {} "
                                     "(shape {} read as {})",
                                     first.file, file_of(input.name), axis, first.file, axis, first.size,
                                     shape_text(first.shape), axes_text(first.axes), file_of(input.name), axis, size,
                                     shape_text(array.shape), axes_text(input.axes)));
      }
    }
    for (std::size_t i = 0; i < array.values.size(); ++i) {
      if (!std::isfinite(array.values[i])) {
        throw UsageError(fmt::format("{}: element {} is {}; inputs must be finite", path.string(),
                                     index_text(array.shape, static_cast<std::int64_t>(i)), array.values[i]));
      }
    }
    inputs.tensors.emplace(input.name, std::move(array));
  }
  for (const auto& [axis, binding] : bindings) inputs.axes[axis] = binding.size;
  return inputs;
}

}  // namespace arch_bench
