#include <stdexcept>

#include "mechanisms/capacity.hpp"
#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/rwkv/cells.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/cuda_plan.hpp"
#include "mechanisms/rwkv/mechanism.hpp"
#include "mechanisms/rwkv/rwkv_mechanism.hpp"
#include "mechanisms/rwkv/rwkv6/cpu.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "mechanisms/rwkv/rwkv6/conformance.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

struct Rwkv6Policy : RwkvMatrixStatePolicy {
  static constexpr RwkvVersion version = RwkvVersion::v6;
  static constexpr bool uses_w = false, uses_u = true;
  template <class T>
  static void decode(const RwkvShape& shape, const RwkvParameters& p, const RwkvTokens<T>& x, float* state, T* out) {
    rwkv6_recurrent(shape, p, 1, x, state, out);
  }
  template <class T>
  static void prefill(const RwkvShape& shape, const RwkvParameters& p, std::int64_t tokens, const RwkvTokens<T>& x,
                      float* state, T* out) {
    rwkv6_prefill_chunkwise(shape, p, tokens, x, state, out);
  }
};

// w = 1 leaves S = sum_i k_i v_i^T, read with r = k_i. The additive memory of recall_reads.hpp, kept in
// this loop order (over value channels innermost), whose roundings the reports have always carried.
MatrixD rwkv6_recall(const MatrixD& keys, const MatrixD& values) {
  if (keys.rows != values.rows) throw std::invalid_argument("rwkv6's capacity probe needs one value per key");
  const std::int64_t n = keys.rows, dk = keys.cols, dv = values.cols;
  MatrixD S(dk, dv), out(n, dv);
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t i = 0; i < dk; ++i) {
      for (std::int64_t j = 0; j < dv; ++j) S(i, j) += keys(t, i) * values(t, j);
    }
  }
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t i = 0; i < dk; ++i) {
      for (std::int64_t j = 0; j < dv; ++j) out(t, j) += keys(t, i) * S(i, j);
    }
  }
  return out;
}

class Rwkv6 final : public RwkvMechanism<Rwkv6Policy> {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{
        "rwkv6",
        "RWKV-6 (Finch), head_dim^2 fp32 state per head, data-dependent decay + bonus u, chunkwise prefill (CPU: 64-token chunks; CUDA bf16: 64-token chunks of 16-token sub-chunks on tensor cores)",
        StateKind::fixed_state,
        cpu_and_cuda_backends()};
    return info;
  }

  // Bytes: r, k, v, d read and out written per token and channel (storage dtype); u (fp32) read
  // once; the state read and written per decode step, written once per prefill. FLOPs (exp counts
  // one): decode per head 5 d^2 (o += r_i S_ij; S_ij = w_i S_ij + k_i v_j) + 7 d (decay, bonus,
  // o = bonus v); prefill as rwkv6_factorised_chunk_flops counts the chunkwise kernel on the path the
  // drawn inputs take (a chunk past 80 nats of decay takes the sub-chunk path, rwkv6_chunk_flops).
  // The count is the CPU form's: CUDA's bf16 form (64-token chunks, diagonal sub-chunk blocks pair
  // by pair) does more exps and tensor-core FLOPs, so a GPU row's achieved GFLOP/s is relative to
  // this common count (a Cell does not know its backend).
  Cost cost(const Cell& cell) const override {
    const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));
    const double params = static_cast<double>(cell.heads) * d * 4;
    if (cell.phase == Phase::decode) return {2 * state + params + 5 * bh * d * e, bh * (5 * d * d + 7 * d)};
    const std::int64_t length = cell.sequence_length;
    const std::int64_t full = length / kRwkv6Chunk, rest = length % kRwkv6Chunk;
    double flops = static_cast<double>(full) * rwkv6_factorised_chunk_flops(kRwkv6Chunk, cell.head_dim);
    if (rest > 0) flops += rwkv6_factorised_chunk_flops(rest, cell.head_dim);
    return {state + params + 5 * bh * static_cast<double>(length) * d * e, bh * flops};
  }

  const ConformanceAdapter* conformance() const override { return &rwkv6_conformance(); }
  const CapacityProbe* capacity_probe(const MechanismOptions&) const override {
    static const RecallProbe probe(
        rwkv6_recall,
        "w = 1 (d = -inf: no decay); S = sum_i k_i v_i^T, read with r = k_i after all n writes, so the bonus u "
        "(which weighs only the current token) does not enter: o = k_i^T S");
    return &probe;
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_rwkv6() { return std::make_unique<Rwkv6>(); }

ARCH_BENCH_REGISTER_MECHANISM(80, make_rwkv6)

}  // namespace arch_bench
