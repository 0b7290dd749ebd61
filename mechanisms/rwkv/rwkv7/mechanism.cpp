#include <stdexcept>

#include "mechanisms/capacity.hpp"
#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/common/prefill_form.hpp"
#include "mechanisms/rwkv/cells.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/cuda_plan.hpp"
#include "mechanisms/rwkv/mechanism.hpp"
#include "mechanisms/rwkv/rwkv_mechanism.hpp"
#include "mechanisms/rwkv/rwkv7/cpu.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"
#include "mechanisms/rwkv/rwkv7/conformance.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

struct Rwkv7Policy : RwkvMatrixStatePolicy {
  static constexpr RwkvVersion version = RwkvVersion::v7;
  static constexpr bool uses_w = false, uses_u = false;
  template <class T>
  static void decode(const RwkvShape& shape, const RwkvParameters&, const RwkvTokens<T>& x, float* state, T* out) {
    rwkv7_recurrent(shape, 1, x, state, out);
  }
  template <class T>
  static void prefill(const RwkvShape& shape, const RwkvParameters&, std::int64_t tokens, const RwkvTokens<T>& x,
                      float* state, T* out) {
    // The recurrence while a head's state fits L1, the chunkwise WY form beyond (cpu.hpp).
    if (recurrent_prefill_pays(shape.dim * shape.dim)) {
      rwkv7_recurrent(shape, tokens, x, state, out);
    } else {
      rwkv7_prefill_chunkwise(shape, tokens, x, state, out);
    }
  }
};

// The delta rule at full strength: kappa_hat = k_i and iclr = 1 make diag(w) + a^T b = I - k_i^T k_i,
// so each write replaces the value stored along k_i: S <- S (I - k_i^T k_i) + v_i^T k_i.
MatrixD rwkv7_recall(const MatrixD& keys, const MatrixD& values) {
  if (keys.rows != values.rows) throw std::invalid_argument("rwkv7's capacity probe needs one value per key");
  const std::int64_t n = keys.rows, dk = keys.cols, dv = values.cols;
  MatrixD S(dv, dk), out(n, dv);
  std::vector<double> sk(static_cast<std::size_t>(dv));
  for (std::int64_t t = 0; t < n; ++t) {
    const double* k = keys.row(t);
    for (std::int64_t i = 0; i < dv; ++i) {
      double dot = 0;
      for (std::int64_t j = 0; j < dk; ++j) dot += S(i, j) * k[j];
      sk[i] = dot;
    }
    for (std::int64_t i = 0; i < dv; ++i) {
      for (std::int64_t j = 0; j < dk; ++j) S(i, j) += (values(t, i) - sk[i]) * k[j];
    }
  }
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t i = 0; i < dv; ++i) {
      double dot = 0;
      for (std::int64_t j = 0; j < dk; ++j) dot += S(i, j) * keys(t, j);
      out(t, i) = dot;
    }
  }
  return out;
}

class Rwkv7 final : public RwkvMechanism<Rwkv7Policy> {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{
        "rwkv7",
        "RWKV-7 (Goose), head_dim^2 fp32 state per head, generalised delta rule, recurrent prefill (vectorised; faster than its exact chunkwise WY form on CPU); on CUDA a tensor-core chunkwise WY prefill for bf16 (32-token chunks), the recurrence otherwise and for decode",
        StateKind::fixed_state,
        cpu_and_cuda_backends()};
    return info;
  }

  // Bytes: r, w_raw, k, v, kappa, iclr read and out written per token and channel (storage dtype);
  // the state read and written per decode step, written once per prefill. FLOPs (exp counts one):
  // decode per head 8 d for w = exp(-e^-0.5 sigmoid(w_raw)), a and b, and per state element 9:
  // S.a (2), S w + (S.a) b + v k (5), S.r (2); the prefill is that recurrence, token by token.
  Cost cost(const Cell& cell) const override {
    const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));
    if (cell.phase == Phase::decode) return {2 * state + 7 * bh * d * e, bh * (9 * d * d + 8 * d)};
    const double length = static_cast<double>(cell.sequence_length);
    const double flops = length * (9 * d * d + 8 * d);
    return {state + 7 * bh * length * d * e, bh * flops};
  }

  const ConformanceAdapter* conformance() const override { return &rwkv7_conformance(); }
  const CapacityProbe* capacity_probe(const MechanismOptions&) const override {
    static const RecallProbe probe(
        rwkv7_recall,
        "w = 1 (no decay), kappa_hat = k_i and iclr = 1 (a = -k_i, b = k_i): S <- S (I - k_i^T k_i) + v_i^T k_i, "
        "the delta rule with beta = 1; read o = S k_i after all n writes");
    return &probe;
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_rwkv7() { return std::make_unique<Rwkv7>(); }

ARCH_BENCH_REGISTER_MECHANISM(90, make_rwkv7)

}  // namespace arch_bench
