#include "mechanisms/rwkv/inputs.hpp"

#include <cmath>
#include <random>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "core/stop_request.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

namespace {

float round_storage(float x, DType dtype) { return dtype == DType::bfloat16 ? round_through<bf16>(x) : x; }

std::uint64_t version_tag(RwkvVersion version) {
  switch (version) {
    case RwkvVersion::v4: return 0x72776b7634;  // "rwkv4"
    case RwkvVersion::v6: return 0x72776b7636;
    case RwkvVersion::v7: return 0x72776b7637;
  }
  return 0;
}

// n / (C - 1) over the layer's C = heads x dim channels, as the RWKV initialisations index them.
double channel_position(std::int64_t c, std::int64_t channels) {
  return channels > 1 ? static_cast<double>(c) / static_cast<double>(channels - 1) : 0.0;
}

}  // namespace

const char* rwkv_mechanism_id(RwkvVersion version) {
  static constexpr std::array<const char*, 3> kIds = {"rwkv4", "rwkv6", "rwkv7"};  // in RwkvVersion's order
  return kIds[static_cast<std::size_t>(version)];
}

std::array<bool, kRwkvInputCount> rwkv_inputs_used(RwkvVersion version) {
  switch (version) {
    case RwkvVersion::v4: return {false, true, true, false, false, false};
    case RwkvVersion::v6: return {true, true, true, true, false, false};
    case RwkvVersion::v7: return {true, true, true, true, true, true};
  }
  return {};
}

MatrixD RwkvInputs::head_matrix(RwkvInput input, std::int64_t bh, std::int64_t rows) const {
  MatrixD m(rows, dim);
  const float* base = at(input, bh, 0);
  for (std::int64_t i = 0; i < rows * dim; ++i) m.data[i] = base[i];
  return m;
}

std::vector<double> RwkvInputs::parameter(const std::vector<float>& p, std::int64_t bh) const {
  const float* row = p.data() + (bh % heads) * dim;
  return std::vector<double>(row, row + dim);
}

void normalize_rows(std::vector<float>& x, std::int64_t dim) {
  for (std::size_t begin = 0; begin < x.size(); begin += static_cast<std::size_t>(dim)) {
    double norm = 0;
    for (std::int64_t j = 0; j < dim; ++j) norm += double(x[begin + j]) * x[begin + j];
    if (norm == 0) continue;
    const double inverse = 1.0 / std::sqrt(norm);
    for (std::int64_t j = 0; j < dim; ++j) x[begin + j] = static_cast<float>(x[begin + j] * inverse);
  }
}

// The initialisations of RWKV-LM (BlinkDL), per channel n of the layer's C channels, at a layer
// depth ratio_0_to_1 drawn uniformly from the seed (a random layer of the stack):
//   rwkv4: time_decay = -5 + 8 (n/(C-1))^(0.7 + 1.3 ratio), w = exp(time_decay) in [e^-5, e^3];
//          time_first = log(0.3) + 0.5 ((n+1) % 3 - 1)
//   rwkv6: time_decay = -6 + 5 (n/(C-1))^(0.7 + 1.3 ratio) (the base of d_t, in [-6, -1]);
//          time_faaaa = ratio (1 - n/(C-1)) + 0.1 ((n+1) % 3 - 1)
//   rwkv7: w0 = -7 + 5 (n/(C-1))^(0.85 + sqrt(ratio)) + 0.5 (the base of w_raw, in [-6.5, -1.5])
void draw_rwkv_parameters(RwkvInputs& inputs, std::uint64_t seed) {
  std::seed_seq seq{version_tag(inputs.version), std::uint64_t{0x706172616d}, seed,
                    static_cast<std::uint64_t>(inputs.heads), static_cast<std::uint64_t>(inputs.dim)};
  std::mt19937_64 rng(seq);
  const double ratio = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  const std::int64_t channels = checked_mul(inputs.heads, inputs.dim);
  const std::size_t count = checked_count(channels);
  inputs.w.assign(count, 0.0f);
  inputs.u.assign(count, 0.0f);
  inputs.time_decay.assign(count, 0.0f);
  for (std::int64_t c = 0; c < channels; ++c) {
    const double x = channel_position(c, channels);
    const double zigzag = static_cast<double>((c + 1) % 3 - 1);
    switch (inputs.version) {
      case RwkvVersion::v4:
        inputs.time_decay[c] = static_cast<float>(-5.0 + 8.0 * std::pow(x, 0.7 + 1.3 * ratio));
        inputs.w[c] = std::exp(inputs.time_decay[c]);
        inputs.u[c] = static_cast<float>(std::log(0.3) + 0.5 * zigzag);
        break;
      case RwkvVersion::v6:
        inputs.time_decay[c] = static_cast<float>(-6.0 + 5.0 * std::pow(x, 0.7 + 1.3 * ratio));
        inputs.u[c] = static_cast<float>(ratio * (1.0 - x) + 0.1 * zigzag);
        break;
      case RwkvVersion::v7:
        inputs.time_decay[c] = static_cast<float>(-7.0 + 5.0 * std::pow(x, 0.85 + std::sqrt(ratio)) + 0.5);
        break;
    }
  }
}

RwkvInputs make_rwkv_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed, RwkvVersion version) {
  RwkvInputs inputs;
  inputs.version = version;
  inputs.batch_heads = cell.batch_heads();
  inputs.heads = cell.heads;
  inputs.tokens = tokens;
  inputs.dim = cell.head_dim;
  draw_rwkv_parameters(inputs, seed);
  const auto used = rwkv_inputs_used(version);
  {
    AttentionInputs attention = make_attention_inputs(cell, tokens, seed);
    if (used[kRwkvR]) inputs.sequence[kRwkvR] = std::move(attention.q);
    inputs.sequence[kRwkvK] = std::move(attention.k);
    inputs.sequence[kRwkvV] = std::move(attention.v);
  }
  if (version == RwkvVersion::v4) return inputs;

  std::seed_seq seq{version_tag(version), seed, static_cast<std::uint64_t>(cell.batch),
                    static_cast<std::uint64_t>(cell.heads), static_cast<std::uint64_t>(cell.head_dim),
                    static_cast<std::uint64_t>(tokens)};
  std::mt19937_64 rng(seq);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t count = inputs.sequence[kRwkvK].size();
  const std::int64_t dim = inputs.dim;
  // The data-dependent part of the decay (RWKV-6/7's LoRA on the token shift) as N(0, 0.5^2)
  // around the per-channel base.
  std::vector<float>& decay = inputs.sequence[kRwkvDecay];
  decay.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (i % kStopPollElements == 0) throw_if_stop_requested("drawing the cell's inputs");  // core/stop_request.hpp
    const std::int64_t bh = static_cast<std::int64_t>(i) / (tokens * dim);
    const std::int64_t c = (bh % inputs.heads) * dim + static_cast<std::int64_t>(i) % dim;
    decay[i] = round_storage(inputs.time_decay[c] + 0.5f * normal(rng), cell.dtype);
  }
  if (version == RwkvVersion::v7) {
    // kappa_hat = normalize(k * k_k) per head with RWKV-7's k_k = 0.85 (a scalar, which the norm
    // cancels); iclr a = sigmoid(a0 + lora) with a0 = 0: sigmoid of N(0, 1), in (0, 1). The
    // replacement key is k itself (k_a = 0).
    std::vector<float>& kappa = inputs.sequence[kRwkvKappa];
    kappa = inputs.sequence[kRwkvK];
    normalize_rows(kappa, dim);
    for (float& x : kappa) x = round_storage(x, cell.dtype);
    std::vector<float>& iclr = inputs.sequence[kRwkvIclr];
    iclr.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (i % kStopPollElements == 0) throw_if_stop_requested("drawing the cell's inputs");
      iclr[i] = round_storage(1.0f / (1.0f + std::exp(-normal(rng))), cell.dtype);
    }
  }
  return inputs;
}

}  // namespace arch_bench
