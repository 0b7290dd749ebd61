#include "mechanisms/retnet/mechanism.hpp"

#include <algorithm>
#include <vector>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/qkv_buffers.hpp"
#include "mechanisms/retnet/capacity.hpp"
#include "mechanisms/retnet/check.hpp"
#include "mechanisms/retnet/cpu.hpp"
#include "mechanisms/retnet/cuda.hpp"
#include "mechanisms/retnet/cuda_plan.hpp"
#include "mechanisms/retnet/reference.hpp"
#include "mechanisms/retnet/conformance.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

RetNetShape shape_of(const Cell& cell) { return {cell.batch_heads(), cell.heads, cell.head_dim, cell.head_dim}; }

std::vector<double> gammas_of(const Cell& cell) { return retnet_gammas(cell.heads); }

// Decode: S already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class RetNetDecodeCell final : public PreparedCell {
 public:
  RetNetDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        gamma_(gammas_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        state_(allocator, shape_.batch_heads * shape_.dk * shape_.dv),
        io_(allocator, inputs_, length_) {
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    build_context_state();
  }

  void run() override {
    retnet_decode_step(shape_, gamma_.data(), io_.q.data(), io_.k.data(), io_.v.data(), state_.data(), io_.out.data());
  }

  Accuracy check() const override { return check_retnet_decode(inputs_, shape_.heads, length_, io_.out.data()); }

  std::vector<ByteSpan> buffers() const override { return cell_spans({state_.byte_span()}, io_); }

 private:
  // Runs the chunkwise prefill over the L context tokens (staging memory outside the tracked
  // allocator: it is set-up, not part of the decode cell) to leave their state in S.
  void build_context_state() {
    if (length_ == 0) return;
    StoredContext<T> context = store_context<T>(inputs_, length_);
    retnet_prefill_chunkwise(shape_, gamma_.data(), length_, context.q.data(), context.k.data(), context.v.data(),
                             state_.data(), context.out.data());
  }

  RetNetShape shape_;
  std::vector<double> gamma_;
  std::int64_t length_;
  AttentionInputs inputs_;
  Buffer<float> state_;
  QkvBuffers<T> io_;
};

template <class T>
class RetNetPrefillCell final : public PreparedCell {
 public:
  RetNetPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        gamma_(gammas_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        io_(allocator, inputs_),
        state_(allocator, shape_.batch_heads * shape_.dk * shape_.dv) {}

  void run() override {
    // A prefill starts a fresh sequence: the state is part of the timed work, zeroed first.
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    retnet_prefill_chunkwise(shape_, gamma_.data(), inputs_.tokens, io_.q.data(), io_.k.data(), io_.v.data(),
                             state_.data(), io_.out.data());
  }

  Accuracy check() const override { return check_retnet_prefill(inputs_, shape_.heads, io_.out.data()); }

  std::vector<ByteSpan> buffers() const override { return cell_spans({state_.byte_span()}, io_); }

 private:
  RetNetShape shape_;
  std::vector<double> gamma_;
  AttentionInputs inputs_;
  QkvBuffers<T> io_;
  Buffer<float> state_;
};

class RetNet final : public KernelMechanism {
 public:
  RetNet()
      : KernelMechanism({.id = "retnet",
                         .title = "multi-scale retention (RetNet): S = gamma_h S + k v^T, gamma_h = 1 - 2^(-5-h), "
                                  "fixed state S",
                         .max_head_dim = kRetNetMaxDim,
                         .cuda_unsupported = retnet_cuda_unsupported,
                         .prepare_cuda = ARCH_BENCH_CUDA_ONLY(prepare_retnet_cuda),
                         .prepare_cpu = prepare_cpu_cells<RetNetDecodeCell, RetNetPrefillCell>,
                         .conformance = retnet_conformance,
                         .capacity = retnet_capacity}) {}

  // state_pass: which state pass the bf16 CUDA prefill on tensor cores runs (cuda_plan.hpp).
  std::vector<OptionSpec> option_specs() const override { return {scalar_decay_state_pass_option()}; }

  std::int64_t state_bytes(const Cell& cell) const override {
    // S (dk x dv) per head, fp32 whatever the storage dtype (see cpu.hpp).
    return square_fp32_state_bytes(cell);
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    // q, k, v and the output; the CPU's chunk buffers live on the threads' stacks and the CUDA
    // recurrence keeps S in registers. The CUDA bf16 prefill's chunkwise form keeps one state per
    // chunk (cuda_plan.hpp); counted on every backend so a plan's prediction does not depend on
    // where it runs (an over-estimate on the CPU).
    return checked_sum(state_bytes(cell), qkv_out_bytes(cell), retnet_cuda_workspace_bytes(cell));
  }

  Cost cost(const Cell& cell) const override {
    const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));
    if (cell.phase == Phase::decode) {
      // Read and write S once; q, k, v in and the output out. Per element of S: gamma s + k v (3),
      // then q s into the output (2).
      return {2 * state + 4 * bh * d * e, bh * 5 * d * d};
    }
    // Per chunk of R rows: Q S_0 and the state update (2 R d^2 each) and the causal intra-chunk
    // products Q K^T and (.)V over the R(R+1)/2 pairs (2d each).
    const std::int64_t length = cell.sequence_length;
    const double full = static_cast<double>(length / kRetNetChunk);
    const double rest = static_cast<double>(length % kRetNetChunk);
    const double chunk = static_cast<double>(kRetNetChunk);
    const double pairs = full * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2;
    const double tokens = static_cast<double>(length);
    return {4 * bh * tokens * d * e + state, bh * (4 * tokens * d * d + pairs * 4 * d)};
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_retnet() { return std::make_unique<RetNet>(); }

ARCH_BENCH_REGISTER_MECHANISM(50, make_retnet)

}  // namespace arch_bench
