#include "mechanisms/common/conformance_adapter.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "core/bf16.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/option_catalog.hpp"

namespace arch_bench {

namespace {
// FNV-1a: a fixed hash, so that generated inputs are the same with every standard library.
std::uint64_t name_hash(const std::string& name) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}
}  // namespace

namespace {
// The value of a declared integer option (its default when absent); 0 when nothing declares it.
std::int64_t declared_integer(std::string_view key, const MechanismOptions& options) {
  for (const DeclaredOption& option : declared_options()) {
    if (option.key == key) return option.spec().integer(options);
  }
  return 0;
}
}  // namespace

ConformanceAxes ConformanceAdapter::generated_axes(const ConformanceShape& shape, const MechanismOptions& options) {
  return {{"batch", shape.batch},
          {"heads", shape.heads},
          {"length", shape.length},
          {"dim", shape.dim},
          {"dv", shape.dim},
          {"d_inner", shape.heads * shape.dim},
          {"m", declared_integer("features", options)},
          {"N", declared_integer("state_size", options)}};
}

std::map<std::string, NpyArray> ConformanceAdapter::generate(const ConformanceShape& shape,
                                                              const MechanismOptions& options, std::uint64_t seed,
                                                              DType dtype) const {
  const ConformanceAxes axes = generated_axes(shape, options);
  std::map<std::string, NpyArray> tensors;
  for (const ConformanceInputSpec& input : spec(options).inputs) {
    NpyArray array;
    array.dtype = NpyDtype::float32;
    for (const std::string& axis : input.axes) {
      const auto found = axes.find(axis);
      if (found == axes.end()) {
        throw std::logic_error(fmt::format("conformance input {} has axis '{}' that --generate cannot size; the "
                                           "adapter must override generate()",
                                           input.name, axis));
      }
      array.shape.push_back(found->second);
    }
    // One stream per input name, so that an input is the same whichever mechanism asks for it.
    std::seed_seq seq{seed, name_hash(input.name)};
    std::mt19937_64 rng(seq);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    array.values.resize(static_cast<std::size_t>(array.size()));
    for (double& x : array.values) {
      const float value = normal(rng);
      x = !input.parameter && dtype == DType::bfloat16 ? round_through<bf16>(value) : value;
    }
    tensors.emplace(input.name, std::move(array));
  }
  return tensors;
}

std::vector<float> to_storage_values(const NpyArray& array, DType dtype) {
  std::vector<float> out(array.values.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float value = static_cast<float>(array.values[i]);
    out[i] = dtype == DType::bfloat16 ? round_through<bf16>(value) : value;
  }
  return out;
}

std::vector<float> to_fp32_values(const NpyArray& array) {
  std::vector<float> out(array.values.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(array.values[i]);
  return out;
}

MatrixD slice_matrix(const std::vector<float>& x, std::int64_t index, std::int64_t rows, std::int64_t cols) {
  MatrixD m(rows, cols);
  const float* base = x.data() + index * rows * cols;
  for (std::int64_t i = 0; i < rows * cols; ++i) m.data[i] = base[i];
  return m;
}

Cell generated_cell(const ConformanceShape& shape, const MechanismOptions& options, DType dtype) {
  Cell cell;
  cell.options = options;
  cell.phase = Phase::prefill;
  cell.sequence_length = shape.length;
  cell.batch = shape.batch;
  cell.heads = shape.heads;
  cell.head_dim = shape.dim;
  cell.dtype = dtype;
  return cell;
}

std::map<std::string, NpyArray> generate_attention_inputs(const ConformanceShape& shape,
                                                          const MechanismOptions& options, std::uint64_t seed,
                                                          DType dtype) {
  const Cell cell = generated_cell(shape, options, dtype);
  const AttentionInputs drawn = make_attention_inputs(cell, shape.length, seed);
  const std::vector<std::int64_t> dims = {shape.batch, shape.heads, shape.length, shape.dim};
  return {{"q", make_array(dims, drawn.q, NpyDtype::float32)},
          {"k", make_array(dims, drawn.k, NpyDtype::float32)},
          {"v", make_array(dims, drawn.v, NpyDtype::float32)}};
}

std::vector<ConformanceOutputSpec> standard_outputs(const std::vector<std::string>& axes, const std::string& meaning) {
  return {{"prefill_out", axes, NpyDtype::float32,
           meaning + ": the causal prefill over all tokens (values in the storage dtype)"},
          {"decode_out", axes, NpyDtype::float32,
           meaning + ": decode steps token by token from an empty state (values in the storage dtype)"},
          {"reference_out", axes, NpyDtype::float64, meaning + ": the fp64 reference on the same rounded inputs"}};
}

void add_state_outputs(std::vector<ConformanceOutputSpec>& outputs, const std::string& name,
                       const std::vector<std::string>& axes, const std::string& meaning,
                       const std::string& reference_meaning) {
  outputs.push_back({name, axes, NpyDtype::float32, meaning});
  outputs.push_back({"reference_" + name, axes, NpyDtype::float64, reference_meaning});
}

ConformanceState kernel_state(const std::string& name, const std::vector<std::int64_t>& shape,
                              const std::vector<float>& prefill, const std::vector<float>& decode,
                              const std::vector<double>& reference) {
  return {name, make_array(shape, prefill, NpyDtype::float32), make_array(shape, decode, NpyDtype::float32),
          make_array(shape, reference, NpyDtype::float64)};
}

std::vector<float> swap_axes(const std::vector<float>& x, std::int64_t outer, std::int64_t a, std::int64_t b,
                             std::int64_t width) {
  std::vector<float> out(x.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < a; ++i) {
      for (std::int64_t j = 0; j < b; ++j) {
        for (std::int64_t w = 0; w < width; ++w) {
          out[((o * b + j) * a + i) * width + w] = x[((o * a + i) * b + j) * width + w];
        }
      }
    }
  }
  return out;
}

void require_declared_options(const MechanismOptions& options, const std::string& mechanism) {
  const std::vector<OptionSpec> specs = option_specs_of(mechanism);
  for (const auto& entry : options.values()) {
    const std::string& key = entry.first;  // a named copy: a lambda may not capture a structured binding (C++20)
    const bool declared = std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& spec) { return spec.key == key; });
    if (!declared) throw UsageError(mechanism + " takes no " + OptionSpec{.key = key}.flag());
  }
}

void require_axis_at_most(const ConformanceInputs& inputs, const std::string& axis, std::int64_t max,
                          const std::string& mechanism) {
  const std::int64_t value = inputs.axis(axis);
  if (value > max) {
    throw UsageError(fmt::format("{} takes {} up to {}, the inputs have {} = {}", mechanism, axis, max, axis, value));
  }
}

}  // namespace arch_bench
