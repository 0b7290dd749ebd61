// `arch-bench conformance --generate DIR`: seeded inputs in a mechanism's layout.
#include <fmt/format.h>

#include "runner/conformance/conformance.hpp"
#include "runner/report/atomic_write.hpp"

namespace arch_bench {

namespace fs = std::filesystem;

std::vector<fs::path> generate_conformance_inputs(const GenerateRequest& request) {
  if (request.folder.empty()) throw UsageError("--generate: the folder is empty");
  const ConformanceShape& shape = request.shape;
  for (const auto& [name, value] : {std::pair{"--batch", shape.batch}, std::pair{"--heads", shape.heads},
                                    std::pair{"--length", shape.length}, std::pair{"--dim", shape.dim}}) {
    if (value < 1) throw UsageError(fmt::format("{} must be at least 1, got {}", name, value));
  }
  const std::vector<std::string> mechanisms =
      request.mechanism.empty() ? conformance_mechanisms() : std::vector<std::string>{request.mechanism};

  // The union of the mechanisms' inputs; an input two mechanisms share (q, k, v) is drawn once.
  std::map<std::string, NpyArray> tensors;
  for (const std::string& id : mechanisms) {
    const ConformanceAdapter& adapter = find_conformance_adapter(id);
    for (auto& [name, array] : adapter.generate(shape, request.options, request.seed, request.dtype)) {
      const auto found = tensors.find(name);
      if (found == tensors.end()) {
        tensors.emplace(name, std::move(array));
      } else if (found->second.shape != array.shape) {
        throw std::logic_error(fmt::format("conformance inputs: {} has shape {} for one mechanism and {} for {}", name,
                                           shape_text(found->second.shape), shape_text(array.shape), id));
      }
    }
  }

  std::error_code error;
  if (fs::exists(request.folder, error) && !fs::is_directory(request.folder, error)) {
    throw UsageError(fmt::format("--generate {} exists and is not a folder", request.folder.string()));
  }
  std::vector<std::string> existing;
  for (const auto& [name, array] : tensors) {
    if (fs::exists(request.folder / (name + ".npy"), error)) existing.push_back(name + ".npy");
  }
  if (!existing.empty()) {
    throw UsageError(fmt::format("{} already holds {}; --generate never replaces input files: choose an empty folder",
                                 request.folder.string(), fmt::join(existing, ", ")));
  }
  std::vector<fs::path> written;
  for (auto& [name, array] : tensors) {
    array.dtype = NpyDtype::float32;
    const fs::path path = request.folder / (name + ".npy");
    write_npy(path, array, /*overwrite=*/false);
    written.push_back(path);
  }
  return written;
}

}  // namespace arch_bench
