#include "mechanisms/mamba2/inputs.hpp"

#include <cmath>
#include <random>
#include <string>

#include "core/checked_size.hpp"
#include "core/errors.hpp"
#include "mechanisms/common/normal_draws.hpp"
#include "mechanisms/common/ssm_parameters.hpp"
#include "mechanisms/mamba2/options.hpp"

namespace arch_bench {

std::vector<float> Mamba2Inputs::A() const { return negated_exp(A_log); }

Mamba2HeadSequenceD Mamba2Inputs::head_sequence(std::int64_t bh, std::int64_t rows) const {
  const std::int64_t b = bh / heads, h = bh % heads, g = group_of(h);
  const std::int64_t p = head_dim, n = state_size;
  Mamba2HeadSequenceD s{MatrixD(rows, p), MatrixD(rows, p), std::vector<double>(rows), MatrixD(rows, n),
                        MatrixD(rows, n)};
  const float* xs = x.data() + bh * tokens * p;
  const float* zs = z.data() + bh * tokens * p;
  const float* bs = B.data() + (b * groups + g) * tokens * n;
  const float* cs = C.data() + (b * groups + g) * tokens * n;
  for (std::int64_t t = 0; t < rows; ++t) {
    for (std::int64_t i = 0; i < p; ++i) {
      s.x(t, i) = xs[t * p + i];
      s.z(t, i) = zs[t * p + i];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      s.B(t, i) = bs[t * n + i];
      s.C(t, i) = cs[t * n + i];
    }
    s.dt_raw[t] = dt_raw[bh * tokens + t];
  }
  return s;
}

Mamba2HeadParametersD Mamba2Inputs::head_parameters(std::int64_t head) const {
  return {static_cast<double>(-std::exp(A_log[head])), dt_bias[head], D[head]};
}

Mamba2TokenSlice Mamba2Inputs::slice(std::int64_t first, std::int64_t count) const {
  const std::int64_t p = head_dim, n = state_size;
  Mamba2TokenSlice s;
  const auto take = [&](const std::vector<float>& from, std::int64_t row, std::int64_t width, std::vector<float>& to) {
    const auto begin = from.begin() + (row * tokens + first) * width;
    to.insert(to.end(), begin, begin + count * width);
  };
  for (std::int64_t r = 0; r < rows(); ++r) {
    take(x, r, p, s.x);
    take(z, r, p, s.z);
    take(dt_raw, r, 1, s.dt_raw);
  }
  for (std::int64_t g = 0; g < batch * groups; ++g) {
    take(B, g, n, s.B);
    take(C, g, n, s.C);
  }
  return s;
}

Mamba2Inputs make_mamba2_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed) {
  Mamba2Inputs in;
  in.batch = cell.batch;
  in.heads = cell.heads;
  in.groups = mamba2_groups_option().integer(cell.options);
  in.tokens = tokens;
  in.head_dim = cell.head_dim;
  in.state_size = mamba2_state_size_option().integer(cell.options);
  if (in.groups < 1 || in.heads % in.groups != 0) {
    throw UsageError("--n-groups " + std::to_string(in.groups) + ": mamba2 needs n_groups to divide --heads (" +
                     std::to_string(in.heads) + ")");
  }
  // Depends on the seed and the shape only; the leading tag keeps the stream apart from the other
  // mechanisms' inputs of the same seed and shape.
  std::seed_seq seq{std::uint64_t{0x6d616d626132}, seed, static_cast<std::uint64_t>(in.batch),
                    static_cast<std::uint64_t>(in.heads), static_cast<std::uint64_t>(in.groups),
                    static_cast<std::uint64_t>(in.head_dim), static_cast<std::uint64_t>(in.state_size),
                    static_cast<std::uint64_t>(tokens)};
  std::mt19937_64 rng(seq);
  const std::size_t per_channel = checked_count(checked_product(in.batch, in.heads, tokens, in.head_dim));
  const std::size_t per_head = checked_count(checked_product(in.batch, in.heads, tokens));
  const std::size_t per_group = checked_count(checked_product(in.batch, in.groups, tokens, in.state_size));
  fill_normal(in.x, per_channel, rng, cell.dtype);
  fill_normal(in.z, per_channel, rng, cell.dtype);
  fill_normal(in.dt_raw, per_head, rng, cell.dtype);
  fill_normal(in.B, per_group, rng, cell.dtype);
  fill_normal(in.C, per_group, rng, cell.dtype);

  std::uniform_real_distribution<float> a_range(1.0f, 16.0f);
  const auto heads = static_cast<std::size_t>(in.heads);
  in.A_log.resize(heads);
  in.dt_bias.resize(heads);
  in.D.resize(heads);
  for (std::size_t h = 0; h < heads; ++h) {
    in.A_log[h] = std::log(a_range(rng));
    in.dt_bias[h] = draw_dt_bias(rng);
    in.D[h] = draw_skip_weight(rng);
  }
  return in;
}

}  // namespace arch_bench
