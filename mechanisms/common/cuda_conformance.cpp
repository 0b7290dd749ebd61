#include "mechanisms/common/cuda_conformance.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

std::vector<float> token_major(const std::vector<float>& x, std::int64_t rows, std::int64_t tokens,
                               std::int64_t width) {
  std::vector<float> out(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      std::copy_n(x.begin() + (r * tokens + t) * width, width, out.begin() + (t * rows + r) * width);
    }
  }
  return out;
}
std::vector<float> row_major(const std::vector<float>& x, std::int64_t rows, std::int64_t tokens, std::int64_t width) {
  std::vector<float> out(x.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy_n(x.begin() + (t * rows + r) * width, width, out.begin() + (r * tokens + t) * width);
    }
  }
  return out;
}
// Overwrites the values of `array` (shape and file dtype kept) with the GPU's.
void replace_values(NpyArray& array, const std::vector<float>& values) {
  if (array.values.size() != values.size()) {
    throw std::logic_error(fmt::format("conformance on cuda: {} values for an array of {}", values.size(),
                                       array.values.size()));
  }
  std::copy(values.begin(), values.end(), array.values.begin());
}
ConformanceState& state_named(ConformanceOutputs& out, const std::string& name) {
  for (ConformanceState& state : out.states) {
    if (state.name == name) return state;
  }
  throw std::logic_error("conformance on cuda: the adapter wrote no state " + name);
}
// A state from the prefill and, when the adapter keeps one, the decode loop's copy.
void replace_state(ConformanceOutputs& out, const std::string& name, const std::vector<float>& prefill,
                   const std::vector<float>& decode) {
  ConformanceState& state = state_named(out, name);
  replace_values(state.value, prefill);
  if (state.decode_value) replace_values(*state.decode_value, decode);
}
Buffer<float> device_zeros(CudaBackend& cuda, std::size_t count) {
  Buffer<float> buffer(cuda.allocator(), count);
  zero_async(cuda, buffer.data(), buffer.bytes());
  return buffer;
}
void require_cuda_cell(const Cell& cell) {
  const Mechanism* mechanism = find_mechanism(cell.mechanism);
  if (auto why = mechanism->unsupported(cell)) throw UsageError(fmt::format("--device cuda: {}", *why));
  if (auto why = mechanism->unsupported_on(cell, "cuda")) throw UsageError(fmt::format("--device cuda: {}", *why));
}
Cell attention_cell(const std::string& mechanism, const ConformanceInputs& inputs, DType dtype,
                    const MechanismOptions& options, std::int64_t width) {
  Cell cell;
  cell.mechanism = mechanism;
  cell.phase = Phase::prefill;
  cell.sequence_length = inputs.axis("length");
  cell.batch = inputs.axis("batch");
  cell.heads = inputs.axis("heads");
  cell.head_dim = width;
  cell.dtype = dtype;
  cell.options = options;
  return cell;
}

}  // namespace arch_bench
