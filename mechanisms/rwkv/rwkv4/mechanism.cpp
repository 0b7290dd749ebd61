#include <cmath>
#include <stdexcept>

#include "mechanisms/capacity.hpp"
#include "mechanisms/rwkv/cells.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/cuda_plan.hpp"
#include "mechanisms/rwkv/reference_outputs.hpp"
#include "mechanisms/rwkv/mechanism.hpp"
#include "mechanisms/rwkv/rwkv_mechanism.hpp"
#include "mechanisms/rwkv/rwkv4/cpu.hpp"
#include "mechanisms/rwkv/rwkv4/reference.hpp"
#include "mechanisms/rwkv/rwkv4/conformance.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

// Operations per channel and token of the kernel (rwkv4/cpu.cpp; exp counts one): the output's
// u + k, difference, exp, two multiply-adds and a divide (9), the update's p - w, difference, exp,
// two multiply-adds and the max (9).
constexpr double kFlopsPerChannelToken = 18;

struct Rwkv4Policy {
  static constexpr RwkvVersion version = RwkvVersion::v4;
  static constexpr bool uses_w = true, uses_u = true;
  static std::int64_t state_floats(const RwkvShape& shape) {
    return checked_product(shape.batch_heads, 3, shape.dim);
  }
  static void reset(const RwkvShape& shape, float* state) { rwkv4_reset_state(shape, state); }
  template <class T>
  static void decode(const RwkvShape& shape, const RwkvParameters& p, const RwkvTokens<T>& x, float* state, T* out) {
    rwkv4_decode_step(shape, p, x.k, x.v, state, out);
  }
  template <class T>
  static void prefill(const RwkvShape& shape, const RwkvParameters& p, std::int64_t tokens, const RwkvTokens<T>& x,
                      float* state, T* out) {
    rwkv4_prefill(shape, p, tokens, x.k, x.v, state, out);
  }
  static MatrixD reference(const RwkvInputs& in, std::int64_t bh, std::int64_t rows) {
    return rwkv_reference_outputs(in, bh, rows);
  }
};

// RWKV-4 has no query: a channel's state is a decayed, e^{k}-weighted sum of its past values and
// the read-out is their weighted mean a / b, the same whichever key asks.
class Rwkv4Capacity final : public CapacityProbe {
 public:
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    if (keys.cols != values.cols || keys.rows != values.rows) {
      throw std::invalid_argument("rwkv4's capacity probe needs keys and values of one shape (one channel each)");
    }
    const std::int64_t n = keys.rows, channels = keys.cols;
    MatrixD out(n, channels);
    for (std::int64_t c = 0; c < channels; ++c) {
      double numerator = 0, denominator = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const double weight = std::exp(keys(i, c));  // |k| <= 1: no stabiliser needed
        numerator += weight * values(i, c);
        denominator += weight;
      }
      for (std::int64_t i = 0; i < n; ++i) out(i, c) = numerator / denominator;
    }
    return out;
  }
  std::string setting() const override {
    return "w = 0 (no decay); the read-out is the state's a / b per channel (the bonus u weighs only a current "
           "token, and none is added): RWKV-4 has no query, so every key reads the same e^k-weighted mean of the "
           "stored values";
  }
};

class Rwkv4 final : public RwkvMechanism<Rwkv4Policy> {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{
        "rwkv4",
        "RWKV-4 WKV (seed 002), per-channel stable state (a, b, p), prefill sequential in time, vectorised over "
        "channels",
        StateKind::fixed_state,
        cpu_and_cuda_backends()};
    return info;
  }

  // Bytes: k, v read and out written per channel-token (storage dtype); w, u read once (fp32); the
  // state read and written per decode step, written once per prefill (it starts fresh).
  Cost cost(const Cell& cell) const override {
    const double e = static_cast<double>(dtype_bytes(cell.dtype));
    const double channels = static_cast<double>(cell.batch_heads()) * static_cast<double>(cell.head_dim);
    const double params = 2.0 * static_cast<double>(cell.heads) * static_cast<double>(cell.head_dim) * 4;
    const double state = static_cast<double>(state_bytes(cell));
    const double tokens = cell.phase == Phase::decode ? 1.0 : static_cast<double>(cell.sequence_length);
    const double state_traffic = cell.phase == Phase::decode ? 2 * state : state;
    return {state_traffic + params + 3 * channels * tokens * e, channels * tokens * kFlopsPerChannelToken};
  }

  const ConformanceAdapter* conformance() const override { return &rwkv4_conformance(); }
  const CapacityProbe* capacity_probe(const MechanismOptions&) const override {
    static const Rwkv4Capacity probe;
    return &probe;
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_rwkv4() { return std::make_unique<Rwkv4>(); }

ARCH_BENCH_REGISTER_MECHANISM(70, make_rwkv4)

}  // namespace arch_bench
