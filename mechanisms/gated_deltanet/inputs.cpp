#include "mechanisms/gated_deltanet/inputs.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/checked_size.hpp"
#include "core/stop_request.hpp"

namespace arch_bench {

std::vector<float> GatedDeltaNetGates::head_rows(const std::vector<float>& x, std::int64_t first,
                                                 std::int64_t rows) const {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(checked_product(batch_heads, rows)));
  for (std::int64_t bh = 0; bh < batch_heads; ++bh) {
    const float* begin = x.data() + bh * tokens + first;
    out.insert(out.end(), begin, begin + rows);
  }
  return out;
}

std::vector<double> GatedDeltaNetGates::head_vector(const std::vector<float>& x, std::int64_t bh,
                                                    std::int64_t rows) const {
  const float* base = x.data() + bh * tokens;
  return std::vector<double>(base, base + rows);
}

GatedDeltaNetGates make_gated_deltanet_gates(const Cell& cell, std::int64_t tokens, std::uint64_t seed) {
  GatedDeltaNetGates gates;
  gates.batch_heads = cell.batch_heads();
  gates.tokens = tokens;
  // The leading tag ("gdn") keeps this stream apart from the q/k/v of the same seed and shape.
  std::seed_seq seq{std::uint64_t{0x67646e}, seed, static_cast<std::uint64_t>(cell.batch),
                    static_cast<std::uint64_t>(cell.heads), static_cast<std::uint64_t>(tokens)};
  std::mt19937_64 rng(seq);
  const std::size_t count = checked_count(checked_mul(gates.batch_heads, tokens));
  std::normal_distribution<double> decay_logit(-3.5, 1.0), write_logit(0.0, 1.0);
  gates.g.resize(count);
  gates.beta.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (i % kStopPollElements == 0) throw_if_stop_requested("drawing the cell's gates");  // core/stop_request.hpp
    const double x = decay_logit(rng);
    // -softplus(x) = -log(1 + e^x), written so that a large x does not overflow e^x.
    gates.g[i] = static_cast<float>(-(std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)))));
    gates.beta[i] = static_cast<float>(1.0 / (1.0 + std::exp(-write_logit(rng))));
  }
  return gates;
}

}  // namespace arch_bench
