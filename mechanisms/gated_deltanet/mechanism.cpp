#include "mechanisms/gated_deltanet/mechanism.hpp"

#include <algorithm>
#include <vector>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/qkv_buffers.hpp"
#include "mechanisms/gated_deltanet/capacity.hpp"
#include "mechanisms/gated_deltanet/check.hpp"
#include "mechanisms/gated_deltanet/cpu.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"
#include "mechanisms/gated_deltanet/cuda_plan.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/gated_deltanet/reference.hpp"
#include "mechanisms/gated_deltanet/conformance.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

GatedDeltaNetShape shape_of(const Cell& cell) { return {cell.batch_heads(), cell.head_dim, cell.head_dim}; }

// Decode: S already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class GatedDeltaNetDecodeCell final : public PreparedCell {
 public:
  GatedDeltaNetDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        gates_(make_gated_deltanet_gates(cell, length_ + 1, seed)),
        state_(allocator, shape_.batch_heads * shape_.dk * shape_.dv),
        g_(allocator, shape_.batch_heads),
        beta_(allocator, shape_.batch_heads),
        io_(allocator, inputs_, length_) {
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    build_context_state();
    for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
      g_.data()[bh] = *gates_.g_at(bh, length_);
      beta_.data()[bh] = *gates_.beta_at(bh, length_);
    }
  }

  void run() override {
    gated_deltanet_decode_step(shape_, io_.q.data(), io_.k.data(), io_.v.data(), g_.data(), beta_.data(),
                               state_.data(), io_.out.data());
  }

  Accuracy check() const override { return check_gated_deltanet_decode(inputs_, gates_, length_, io_.out.data()); }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), g_.byte_span(), beta_.byte_span()}, io_);
  }

 private:
  // Runs the chunkwise prefill over the L context tokens (staging memory outside the tracked
  // allocator: it is set-up, not part of the decode cell) to leave their state in S.
  void build_context_state() {
    if (length_ == 0) return;
    StoredContext<T> context = store_context<T>(inputs_, length_);
    const std::vector<float> g = gates_.head_rows(gates_.g, 0, length_);
    const std::vector<float> beta = gates_.head_rows(gates_.beta, 0, length_);
    gated_deltanet_prefill_chunkwise(shape_, length_, context.q.data(), context.k.data(), context.v.data(), g.data(),
                                     beta.data(), state_.data(), context.out.data());
  }

  GatedDeltaNetShape shape_;
  std::int64_t length_;
  AttentionInputs inputs_;
  GatedDeltaNetGates gates_;
  Buffer<float> state_, g_, beta_;
  QkvBuffers<T> io_;
};

template <class T>
class GatedDeltaNetPrefillCell final : public PreparedCell {
 public:
  GatedDeltaNetPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        gates_(make_gated_deltanet_gates(cell, cell.sequence_length, seed)),
        io_(allocator, inputs_),
        g_(allocator, gates_.g.size()),
        beta_(allocator, gates_.beta.size()),
        state_(allocator, shape_.batch_heads * shape_.dk * shape_.dv) {
    std::copy(gates_.g.begin(), gates_.g.end(), g_.data());
    std::copy(gates_.beta.begin(), gates_.beta.end(), beta_.data());
  }

  void run() override {
    // A prefill starts a fresh sequence: the state is part of the timed work, zeroed first.
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    gated_deltanet_prefill_chunkwise(shape_, inputs_.tokens, io_.q.data(), io_.k.data(), io_.v.data(), g_.data(),
                                     beta_.data(), state_.data(), io_.out.data());
  }

  Accuracy check() const override { return check_gated_deltanet_prefill(inputs_, gates_, io_.out.data()); }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({g_.byte_span(), beta_.byte_span(), state_.byte_span()}, io_);
  }

 private:
  GatedDeltaNetShape shape_;
  AttentionInputs inputs_;
  GatedDeltaNetGates gates_;
  QkvBuffers<T> io_;
  Buffer<float> g_, beta_, state_;
};

class GatedDeltaNet final : public KernelMechanism {
 public:
  GatedDeltaNet()
      : KernelMechanism({.id = "gated_deltanet",
                         .title = "Gated DeltaNet: S = exp(g) (I - beta k k^T) S + beta k v^T, k and q "
                                  "L2-normalised, fixed state S",
                         .max_head_dim = kGatedDeltaNetMaxDim,
                         .cuda_unsupported = gated_deltanet_cuda_unsupported,
                         .prepare_cuda = ARCH_BENCH_CUDA_ONLY(prepare_gated_deltanet_cuda),
                         .prepare_cpu = prepare_cpu_cells<GatedDeltaNetDecodeCell, GatedDeltaNetPrefillCell>,
                         .conformance = gated_deltanet_conformance,
                         .capacity = gated_deltanet_capacity}) {}

  std::int64_t state_bytes(const Cell& cell) const override {
    // S (dk x dv) per head, fp32 whatever the storage dtype (see cpu.hpp).
    return square_fp32_state_bytes(cell);
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    // q, k, v and the output in the storage dtype, g and beta in fp32; the CPU's chunk buffers live
    // on the threads' stacks and the CUDA recurrence keeps S in registers. The CUDA bf16 prefill's
    // chunkwise form keeps per-chunk operands (cuda_plan.hpp); counted on every backend so a plan's
    // prediction does not depend on where it runs (an over-estimate on the CPU).
    return checked_sum(checked_sum(state_bytes(cell), qkv_out_bytes(cell)),
                       checked_sum(checked_product(run_tokens(cell), cell.batch_heads(), 8),
                                   gated_deltanet_cuda_workspace_bytes(cell)));
  }

  std::int64_t predicted_process_bytes(const Cell& cell) const override {
    // Beside q, k, v: the gates g and beta, fp32 per (batch, head) and token, drawn and (decode) staged.
    const std::int64_t gates = checked_product(2, cell.batch_heads(), drawn_tokens(cell), 4);
    const std::int64_t staged_gates = cell.phase == Phase::decode ? checked_product(2, cell.batch_heads(), cell.sequence_length, 4) : 0;
    return ProcessBytes{predicted_peak_bytes(cell), checked_add(drawn_attention_bytes(cell, 3), gates),
                        checked_add(staged_context_bytes(cell, 4), staged_gates), reference_head_bytes(cell, 8)}
        .total();
  }

  Cost cost(const Cell& cell) const override {
    const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));
    if (cell.phase == Phase::decode) {
      // Read and write S once (the second pass finds it in cache); q, k, v, g, beta in and the
      // output out. Per element of S: S^T k (2), alpha s + k u (3), q s into the output (2).
      return {2 * state + bh * (4 * d * e + 8), bh * 7 * d * d};
    }
    // Per chunk of R rows: the four R x d x d products (W S_0, Q S_0, the state update: 2 R d^2
    // each, 6 R d^2), the causal R x R products over the R(R+1)/2 pairs (T K, T V, Q K^T, (.) U:
    // 2d each) and K K^T over the R(R-1)/2 strict pairs, and the triangular solve (R^3/3).
    const std::int64_t length = cell.sequence_length;
    const std::int64_t full = length / kGatedDeltaNetChunk, rest = length % kGatedDeltaNetChunk;
    const auto per_chunk = [d = d](double r) {
      return 6 * r * d * d + r * (r + 1) * 4 * d + r * (r - 1) * d + (r - 1) * r * (r + 1) / 3;
    };
    const double flops =
        static_cast<double>(full) * per_chunk(static_cast<double>(kGatedDeltaNetChunk)) +
        (rest > 0 ? per_chunk(static_cast<double>(rest)) : 0.0);
    const double tokens = static_cast<double>(length);
    return {bh * tokens * (4 * d * e + 8) + state, bh * flops};
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_gated_deltanet() { return std::make_unique<GatedDeltaNet>(); }

ARCH_BENCH_REGISTER_MECHANISM(60, make_gated_deltanet)

}  // namespace arch_bench
