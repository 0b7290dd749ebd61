#include "mechanisms/common/inputs.hpp"

#include <random>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "core/stop_request.hpp"
#include "mechanisms/common/normal_draws.hpp"

namespace arch_bench {

MatrixD AttentionInputs::head_matrix(const std::vector<float>& tensor, std::int64_t bh,
                                     std::int64_t rows) const {
  MatrixD m(rows, dim);
  const float* base = tensor.data() + bh * tokens * dim;
  for (std::int64_t i = 0; i < rows * dim; ++i) m.data[i] = base[i];
  return m;
}

std::vector<float> AttentionInputs::head_rows(const std::vector<float>& tensor, std::int64_t first,
                                             std::int64_t rows) const {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(batch_heads * rows * dim));
  for (std::int64_t bh = 0; bh < batch_heads; ++bh) {
    const float* begin = tensor.data() + (bh * tokens + first) * dim;
    out.insert(out.end(), begin, begin + rows * dim);
  }
  return out;
}

const OptionSpec& qk_scale_option() {
  static const OptionSpec spec{.key = "qk_scale",
                               .type = OptionType::number,
                               .default_value = 1.0,
                               .help = "Scale of the N(0,1) q and k inputs, every mechanism's (default 1); FAVOR+ "
                                       "error grows with |q|, |k| (docs/methodology.md)",
                               .minimum = 0.0,
                               .exclusive_minimum = true,
                               .shapes_inputs = true};
  return spec;
}

AttentionInputs make_attention_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed) {
  AttentionInputs inputs;
  inputs.batch_heads = cell.batch_heads();
  inputs.tokens = tokens;
  inputs.dim = cell.head_dim;
  // The stream depends on the seed and the shape only (not on the mechanism), so every mechanism
  // of a run sees the same tokens.
  std::seed_seq seq{seed, static_cast<std::uint64_t>(cell.batch), static_cast<std::uint64_t>(cell.heads),
                    static_cast<std::uint64_t>(cell.head_dim), static_cast<std::uint64_t>(tokens)};
  std::mt19937_64 rng(seq);
  const std::size_t count = checked_count(checked_product(inputs.batch_heads, tokens, cell.head_dim));
  const float qk_scale = static_cast<float>(qk_scale_option().number(cell.options));
  fill_normal(inputs.q, count, rng, cell.dtype, qk_scale);
  fill_normal(inputs.k, count, rng, cell.dtype, qk_scale);
  fill_normal(inputs.v, count, rng, cell.dtype);
  return inputs;
}

template <class T>
void store(const float* source, std::int64_t count, T* destination) {
  // Set-up only (prepare, the context's staging), never timed: a stop is seen between two slices.
  for (std::int64_t i = 0; i < count; ++i) {
    if (i % kStopPollElements == 0) throw_if_stop_requested("storing the cell's inputs");
    destination[i] = from_float<T>(source[i]);
  }
}
template void store<float>(const float*, std::int64_t, float*);
template void store<bf16>(const float*, std::int64_t, bf16*);

}  // namespace arch_bench
