#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/mamba/options.hpp"

#include <cmath>
#include <random>

#include "core/checked_size.hpp"
#include "mechanisms/common/normal_draws.hpp"
#include "mechanisms/common/ssm_parameters.hpp"

namespace arch_bench {

std::vector<float> MambaInputs::A() const { return negated_exp(A_log); }

MambaSequenceD MambaInputs::reference_sequence(std::int64_t b, std::int64_t rows) const {
  MambaSequenceD x{MatrixD(rows, channels), MatrixD(rows, channels), MatrixD(rows, channels),
                   MatrixD(rows, state_size), MatrixD(rows, state_size)};
  for (std::int64_t c = 0; c < channels; ++c) {
    const std::int64_t r = b * channels + c;
    for (std::int64_t t = 0; t < rows; ++t) {
      x.u(t, c) = row(u, r)[t];
      x.dt_raw(t, c) = row(dt_raw, r)[t];
      x.z(t, c) = row(z, r)[t];
    }
  }
  for (std::int64_t t = 0; t < rows; ++t) {
    for (std::int64_t s = 0; s < state_size; ++s) {
      x.B(t, s) = token(B, b, t)[s];
      x.C(t, s) = token(C, b, t)[s];
    }
  }
  return x;
}

MambaParametersD MambaInputs::reference_parameters() const {
  MambaParametersD p{MatrixD(channels, state_size), std::vector<double>(dt_bias.begin(), dt_bias.end()),
                     std::vector<double>(D.begin(), D.end())};
  for (std::size_t i = 0; i < A_log.size(); ++i) p.A_log.data[i] = A_log[i];
  return p;
}

MambaInputs make_mamba_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed) {
  MambaInputs inputs;
  inputs.batch = cell.batch;
  inputs.tokens = tokens;
  inputs.channels = checked_mul(cell.heads, cell.head_dim);
  inputs.state_size = mamba_state_size_option().integer(cell.options);
  // Depends on the seed and the shape only; the leading tag keeps the stream apart from the
  // attention inputs of the same seed and shape.
  std::seed_seq seq{std::uint64_t{0x6d616d6261}, seed, static_cast<std::uint64_t>(cell.batch),
                    static_cast<std::uint64_t>(inputs.channels), static_cast<std::uint64_t>(inputs.state_size),
                    static_cast<std::uint64_t>(tokens)};
  std::mt19937_64 rng(seq);
  const std::size_t per_channel = checked_count(checked_product(inputs.batch, inputs.channels, tokens));
  const std::size_t per_token = checked_count(checked_product(inputs.batch, tokens, inputs.state_size));
  fill_normal(inputs.u, per_channel, rng, cell.dtype);
  fill_normal(inputs.dt_raw, per_channel, rng, cell.dtype);
  fill_normal(inputs.z, per_channel, rng, cell.dtype);
  fill_normal(inputs.B, per_token, rng, cell.dtype);
  fill_normal(inputs.C, per_token, rng, cell.dtype);

  const std::int64_t channels = inputs.channels, n = inputs.state_size;
  inputs.A_log.resize(checked_count(checked_mul(channels, n)));
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t s = 0; s < n; ++s) inputs.A_log[c * n + s] = std::log(static_cast<float>(s + 1));
  }
  inputs.dt_bias.resize(static_cast<std::size_t>(channels));
  inputs.D.resize(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    inputs.dt_bias[c] = draw_dt_bias(rng);
    inputs.D[c] = draw_skip_weight(rng);
  }
  return inputs;
}

}  // namespace arch_bench
