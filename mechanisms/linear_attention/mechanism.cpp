#include "mechanisms/linear_attention/mechanism.hpp"
#include "mechanisms/linear_attention/options.hpp"

#include <vector>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/linear_attention/check.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/qkv_buffers.hpp"
#include "mechanisms/linear_attention/capacity.hpp"
#include "mechanisms/common/prefill_form.hpp"
#include "mechanisms/linear_attention/cpu.hpp"
#include "mechanisms/linear_attention/cuda.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"
#include "mechanisms/linear_attention/reference.hpp"
#include "mechanisms/linear_attention/conformance.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

LinearAttentionShape shape_of(const Cell& cell) {
  return {cell.batch_heads(), cell.head_dim, cell.head_dim,
          parse_feature_map(linear_attention_feature_map_option().text(cell.options)).value_or(FeatureMap::elu_plus_one)};
}

// Decode: (S, z) already hold the L context tokens; the step folds in token L and reads it out.
template <class T>
class LinearDecodeCell final : public PreparedCell {
 public:
  LinearDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        state_(allocator, shape_.batch_heads * shape_.dk * shape_.dv),
        normalizer_(allocator, shape_.batch_heads * shape_.dk),
        io_(allocator, inputs_, length_) {
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    std::fill(normalizer_.span().begin(), normalizer_.span().end(), 0.0f);
    build_context_state();
  }

  void run() override {
    linear_attention_decode_step(shape_, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(), normalizer_.data(),
                                 io_.out.data());
  }

  Accuracy check() const override {
    return check_linear_attention_decode(inputs_, length_, shape_.map, io_.out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), normalizer_.byte_span()}, io_);
  }

 private:
  // Runs the chunkwise prefill over the L context tokens (staging memory outside the tracked
  // allocator: it is set-up, not part of the decode cell) to leave their state in (S, z).
  void build_context_state() {
    if (length_ == 0) return;
    StoredContext<T> context = store_context<T>(inputs_, length_);
    linear_attention_prefill_chunkwise(shape_, length_, context.q.data(), context.k.data(), context.v.data(),
                                       state_.data(), normalizer_.data(), context.out.data());
  }

  LinearAttentionShape shape_;
  std::int64_t length_;
  AttentionInputs inputs_;
  Buffer<float> state_, normalizer_;
  QkvBuffers<T> io_;
};

template <class T>
class LinearPrefillCell final : public PreparedCell {
 public:
  LinearPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        io_(allocator, inputs_),
        state_(allocator, shape_.batch_heads * shape_.dk * shape_.dv),
        normalizer_(allocator, shape_.batch_heads * shape_.dk) {}

  void run() override {
    // A prefill starts a fresh sequence: the state is part of the timed work, zeroed first.
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    std::fill(normalizer_.span().begin(), normalizer_.span().end(), 0.0f);
    linear_attention_prefill(shape_, inputs_.tokens, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(),
                             normalizer_.data(), io_.out.data());
  }

  Accuracy check() const override { return check_linear_attention_prefill(inputs_, shape_.map, io_.out.data()); }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), normalizer_.byte_span()}, io_);
  }

 private:
  LinearAttentionShape shape_;
  AttentionInputs inputs_;
  QkvBuffers<T> io_;
  Buffer<float> state_, normalizer_;
};

class LinearAttention final : public KernelMechanism {
 public:
  LinearAttention()
      : KernelMechanism({.id = "linear_attention",
                         .title = "causal linear attention, phi = elu+1 (or relu+1), fixed state (S, z)",
                         .max_head_dim = 256,
                         .cuda_unsupported = linear_attention_cuda_unsupported,
                         .prepare_cuda = ARCH_BENCH_CUDA_ONLY(prepare_linear_attention_cuda),
                         .prepare_cpu = prepare_cpu_cells<LinearDecodeCell, LinearPrefillCell>,
                         .conformance = linear_attention_conformance}) {}

  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (auto problem = KernelMechanism::unsupported(cell)) return problem;
    if (!parse_feature_map(linear_attention_feature_map_option().text(cell.options))) {
      return "unknown feature map '" + linear_attention_feature_map_option().text(cell.options) + "' (use elu or relu)";
    }
    return std::nullopt;
  }

  std::int64_t state_bytes(const Cell& cell) const override {
    // S (dk x dv) and z (dk) per head, fp32 whatever the storage dtype (see cpu.hpp).
    return checked_product(cell.batch_heads(), checked_add(checked_mul(cell.head_dim, cell.head_dim), cell.head_dim), 4);
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    // A GPU prefill also keeps one (S, z) per chunk (cuda_plan.hpp); counted on every backend so a
    // plan's prediction does not depend on where it runs (an over-estimate on the CPU).
    return checked_sum(state_bytes(cell), qkv_out_bytes(cell), linear_attention_cuda_workspace_bytes(cell));
  }

  Cost cost(const Cell& cell) const override {
    const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));
    if (cell.phase == Phase::decode) {
      // Read and write the state once; q, k, v in and the output out.
      return {2 * state + 4 * bh * d * e, bh * (4 * d * d + 4 * d)};
    }
    const double length = static_cast<double>(cell.sequence_length);
    // The form linear_attention_prefill takes: the recurrence does a decode step's FLOPs per token;
    // the chunk form adds the masked intra-chunk products, on average chunk/2 keys x (2d for the
    // weight + 2d for the values).
    const double per_token = recurrent_prefill_pays(cell.head_dim * cell.head_dim)
                                 ? 4 * d * d + 4 * d
                                 : 4 * d * d + 2 * static_cast<double>(kLinearAttentionChunk) * d;
    return {4 * bh * length * d * e + state, bh * length * per_token};
  }

  std::vector<OptionSpec> option_specs() const override {
    return {linear_attention_feature_map_option(), scalar_decay_state_pass_option()};
  }
  const CapacityProbe* capacity_probe(const MechanismOptions& options) const override {
    return &linear_attention_capacity(parse_feature_map(linear_attention_feature_map_option().text(options)).value_or(FeatureMap::elu_plus_one));
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_linear_attention() { return std::make_unique<LinearAttention>(); }

ARCH_BENCH_REGISTER_MECHANISM(20, make_linear_attention)

}  // namespace arch_bench
