#include "mechanisms/performer/mechanism.hpp"
#include "mechanisms/performer/options.hpp"
#include "mechanisms/performer/reference_heads.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/stop_request.hpp"
#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/qkv_buffers.hpp"
#include "mechanisms/performer/approximation.hpp"
#include "mechanisms/performer/capacity.hpp"
#include "mechanisms/performer/cpu.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/performer/cuda_plan.hpp"
#include "mechanisms/performer/reference.hpp"
#include "mechanisms/performer/conformance.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

// Exact softmax rows per head compared in a prefill check (as softmax_kv checks its own).
constexpr std::int64_t kSoftmaxRowsChecked = 64;

PerformerShape shape_of(const Cell& cell) {
  return {cell.batch_heads(), cell.head_dim, cell.head_dim, performer_features_option().integer(cell.options),
          parse_performer_features(performer_feature_map_option().text(cell.options)).value_or(PerformerFeatures::favor_plus),
          parse_performer_stabilizer(favor_stabilizer_option().text(cell.options)).value_or(PerformerStabilizer::causal)};
}

// The cell's projection (fp64 values, exactly the fp32 ones the kernel uses) and its packed copy.
struct Projection {
  MatrixD rows;
  Buffer<float> packed;
  Projection(const PerformerShape& shape, std::uint64_t seed, Allocator& allocator)
      : rows(performer_projection(shape.kind, shape.features, shape.dk, seed)),
        packed(allocator, performer_projection_floats(shape)) {
    pack_performer_projection(rows, packed.data());
  }
};

void add_approximation(Accuracy& accuracy, const SoftmaxApproximationError& error,
                       std::int64_t nonpositive) {
  accuracy.nonpositive_denominators = nonpositive;
  accuracy.approx_rel_l2_vs_softmax = error.rel_l2;
  accuracy.approx_max_abs_vs_softmax = error.max_abs;
}

// Decode: (S, z, M) already hold the L context tokens; the step folds in token L and reads it out.
template <class T>
class PerformerDecodeCell final : public PreparedCell {
 public:
  PerformerDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        projection_(shape_, seed, allocator),
        state_(allocator, shape_.batch_heads * shape_.features * shape_.dv),
        normalizer_(allocator, shape_.batch_heads * shape_.features),
        running_max_(allocator, shape_.batch_heads),
        value_sum_(allocator, performer_value_sum_floats(shape_)),
        io_(allocator, inputs_, length_) {
    performer_reset_state(shape_, state_.data(), normalizer_.data(), running_max_.data(), value_sum_.data());
    build_context_state();
  }

  void run() override {
    nonpositive_ = performer_decode_step(shape_, projection_.packed.data(), io_.q.data(), io_.k.data(),
                                         io_.v.data(), state_.data(), normalizer_.data(), running_max_.data(),
                                         io_.out.data(), value_sum_.data());
  }

  Accuracy check() const override {
    ErrorAccumulator errors;
    const std::vector<PerformerResult> refs = performer_reference_heads(inputs_, length_ + 1, shape_, projection_.rows);
    for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
      errors.add_row(io_.out.data() + bh * shape_.dv, refs[bh].outputs.row(length_), shape_.dv);
    }
    Accuracy accuracy = errors.finish();
    add_approximation(accuracy, approximation_vs_softmax_decode(inputs_, io_.out.data()), nonpositive_);
    return accuracy;
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({projection_.packed.byte_span(), state_.byte_span(), normalizer_.byte_span(),
                       running_max_.byte_span(), value_sum_.byte_span()},
                      io_);
  }

 private:
  // Runs the chunkwise prefill over the L context tokens (staging memory outside the tracked
  // allocator: it is set-up, not part of the decode cell) to leave their state in (S, z, M).
  void build_context_state() {
    if (length_ == 0) return;
    const int threads = omp_get_max_threads();
    StoredContext<T> context = store_context<T>(inputs_, length_);
    std::vector<float> workspace(performer_prefill_workspace_floats(shape_, threads));
    performer_prefill_chunkwise(shape_, length_, projection_.packed.data(), context.q.data(), context.k.data(),
                                context.v.data(), state_.data(), normalizer_.data(), running_max_.data(),
                                workspace.data(), threads, context.out.data(), value_sum_.data());
  }

  PerformerShape shape_;
  std::int64_t length_;
  AttentionInputs inputs_;
  Projection projection_;
  Buffer<float> state_, normalizer_, running_max_, value_sum_;
  QkvBuffers<T> io_;
  std::int64_t nonpositive_ = 0;
};

template <class T>
class PerformerPrefillCell final : public PreparedCell {
 public:
  PerformerPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        threads_(omp_get_max_threads()),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        projection_(shape_, seed, allocator),
        io_(allocator, inputs_),
        state_(allocator, shape_.batch_heads * shape_.features * shape_.dv),
        normalizer_(allocator, shape_.batch_heads * shape_.features),
        running_max_(allocator, shape_.batch_heads),
        value_sum_(allocator, performer_value_sum_floats(shape_)),
        workspace_(allocator, performer_prefill_workspace_floats(shape_, threads_)) {}

  void run() override {
    // A prefill starts a fresh sequence: emptying the state is part of the timed work.
    performer_reset_state(shape_, state_.data(), normalizer_.data(), running_max_.data(), value_sum_.data());
    nonpositive_ = performer_prefill_chunkwise(shape_, inputs_.tokens, projection_.packed.data(), io_.q.data(),
                                               io_.k.data(), io_.v.data(), state_.data(), normalizer_.data(),
                                               running_max_.data(), workspace_.data(), threads_, io_.out.data(),
                                               value_sum_.data());
  }

  Accuracy check() const override {
    ErrorAccumulator errors;
    const std::vector<PerformerResult> refs = performer_reference_heads(inputs_, inputs_.tokens, shape_, projection_.rows);
    for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
      for (std::int64_t t = 0; t < inputs_.tokens; ++t) {
        errors.add_row(io_.out.data() + (bh * inputs_.tokens + t) * shape_.dv, refs[bh].outputs.row(t), shape_.dv);
      }
    }
    Accuracy accuracy = errors.finish();
    add_approximation(accuracy, approximation_vs_softmax_prefill(inputs_, io_.out.data(), kSoftmaxRowsChecked),
                      nonpositive_);
    return accuracy;
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({projection_.packed.byte_span(), state_.byte_span(), normalizer_.byte_span(),
                       running_max_.byte_span(), value_sum_.byte_span(), workspace_.byte_span()},
                      io_);
  }

 private:
  PerformerShape shape_;
  int threads_;
  AttentionInputs inputs_;
  Projection projection_;
  QkvBuffers<T> io_;
  Buffer<float> state_, normalizer_, running_max_, value_sum_, workspace_;
  std::int64_t nonpositive_ = 0;
};

// The CUDA kernels' limits; the published stabiliser has no CUDA kernels at all.
std::optional<std::string> performer_cuda_problem(const Cell& cell) {
  if (shape_of(cell).published()) {
    return "the published favor stabiliser has CPU kernels only (use --device cpu, or --favor-stabilizer causal)";
  }
  return performer_cuda_unsupported(cell);
}

class Performer final : public KernelMechanism {
 public:
  Performer()
      : KernelMechanism({.id = "performer",
                         .title = "Performer: m random features (favor+ or trig) on the linear-attention recurrence, "
                                  "fixed state",
                         .max_head_dim = kPerformerMaxDim,
                         .cuda_unsupported = performer_cuda_problem,
                         .prepare_cuda = ARCH_BENCH_CUDA_ONLY(prepare_performer_cuda),
                         .prepare_cpu = prepare_cpu_cells<PerformerDecodeCell, PerformerPrefillCell>,
                         .conformance = performer_conformance}) {}

  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (auto problem = KernelMechanism::unsupported(cell)) return problem;
    const std::int64_t m = performer_features_option().integer(cell.options);
    if (m < 1 || m > kPerformerMaxFeatures) {
      return "performer takes features (m) from 1 to 4096, got " + std::to_string(m);
    }
    const auto kind = parse_performer_features(performer_feature_map_option().text(cell.options));
    if (!kind) {
      return "performer feature map '" + performer_feature_map_option().text(cell.options) +
             "' is unknown (use favor+ or trig; elu/relu are linear_attention's)";
    }
    if (*kind == PerformerFeatures::trig && m % 2 != 0) {
      return "trig features come in sin/cos pairs: m must be even, got " + std::to_string(m);
    }
    const auto stabilizer = parse_performer_stabilizer(favor_stabilizer_option().text(cell.options));
    if (!stabilizer) {
      return "performer favor_stabilizer '" + favor_stabilizer_option().text(cell.options) + "' is unknown (use causal or published)";
    }
    if (*stabilizer == PerformerStabilizer::published && *kind == PerformerFeatures::trig) {
      return "the published favor stabiliser applies to favor+ features; trig features have no eps";
    }
    return std::nullopt;
  }

  std::int64_t state_bytes(const Cell& cell) const override {
    // S (m x dv), z (m) and the running max (1) per head, fp32 whatever the storage dtype; the
    // published stabiliser adds sum_t v_t (dv) and the token count (1).
    const std::int64_t m = performer_features_option().integer(cell.options);
    const std::int64_t published = shape_of(cell).published() ? checked_sum(cell.head_dim, 1) : 0;
    return checked_product(cell.batch_heads(), checked_sum(checked_mul(m, cell.head_dim), m, 1, published), 4);
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    // A GPU cell holds its own workspace instead of the CPU's (cuda_plan.hpp: the features of every
    // token, one (S, z) per chunk); the larger of the two bounds either backend, so the prediction
    // does not depend on where the cell runs.
    const std::int64_t workspace =
        std::max(cpu_workspace_bytes(cell, omp_get_max_threads()), performer_cuda_workspace_bytes(cell));
    return checked_add(buffer_bytes_but_workspace(cell), workspace);
  }
  std::int64_t predicted_process_bytes(const Cell& cell) const override {
    const PerformerShape shape = shape_of(cell);
    const std::int64_t threads = omp_get_max_threads();
    const std::int64_t tokens = drawn_tokens(cell), d = cell.head_dim, m = shape.features;
    // A decode cell's context: q, k, v and out staged, plus the chunkwise prefill's workspace.
    const std::int64_t staged =
        cell.phase == Phase::decode
            ? checked_add(staged_context_bytes(cell, 4), checked_mul(performer_prefill_workspace_floats(shape, threads), 4))
            : 0;
    // The check keeps every head's fp64 reference at once (outputs [tokens, dv], S [m, dv], z [m]:
    // the heads run in parallel), while each thread holds its head's q, k, v in fp64 and the
    // features of its tokens, and then the rows compared with exact softmax.
    const std::int64_t all_heads =
        checked_product(shape.batch_heads, checked_sum(checked_mul(tokens, d), checked_mul(m, d), m), 8);
    const std::int64_t per_thread = checked_product(threads, tokens, checked_sum(checked_mul(6, d), checked_mul(2, m)), 8);
    // The CPU cell's buffers, not predicted_peak_bytes: that bound takes the GPU prefill's workspace
    // (the features of every token), 3x the process of a CPU prefill at L = 512.
    const std::int64_t cpu_buffers = checked_add(buffer_bytes_but_workspace(cell), cpu_workspace_bytes(cell, threads));
    return ProcessBytes{cpu_buffers, drawn_attention_bytes(cell, 3), staged,
                        checked_add(all_heads, per_thread)}
        .total();
  }


  Cost cost(const Cell& cell) const override {
    const PerformerShape shape = shape_of(cell);
    const auto [e, bh, d, state] = head_cost_terms(cell, state_bytes(cell));
    const double m = static_cast<double>(shape.features);
    const double rows = static_cast<double>(shape.projection_rows());
    const double projection = static_cast<double>(performer_projection_floats(shape)) * 4;
    // Per token and head: the projections of q and k (2 rows x dk flops each, per projection
    // row), the features (~2 flops each besides the exp), and the state work: rescale + update +
    // read-out of S, 4 m dv. None of it depends on L.
    const double per_token = 2 * 2 * rows * d + 2 * 2 * m + 4 * m * d;
    if (cell.phase == Phase::decode) {
      // Read and write the state once, read W; q, k, v in and the output out.
      return {2 * state + projection + 4 * bh * d * e, bh * per_token};
    }
    const double length = static_cast<double>(cell.sequence_length);
    const double chunk = static_cast<double>(kPerformerChunk);
    // Chunkwise: the same per-token work, plus the masked intra-chunk products, on average
    // (chunk + 1)/2 keys x (2m for the weight + 2 dv for the values).
    // The published stabiliser projects every key twice: once for the sequence's key max first.
    const double key_max_pass = shape.published() ? 2 * rows * d : 0;
    return {4 * bh * length * d * e + state + projection,
            bh * length * (per_token + key_max_pass + (chunk + 1) / 2 * (2 * m + 2 * d))};
  }

  std::vector<OptionSpec> option_specs() const override { return performer_option_specs(); }
  const CapacityProbe* capacity_probe(const MechanismOptions& options) const override {
    return &performer_capacity(parse_performer_features(performer_feature_map_option().text(options))
                                   .value_or(PerformerFeatures::favor_plus),
                               performer_features_option().integer(options));
  }

 private:
  // What every performer cell holds on either backend: the state, the projection W (fp32), and q,
  // k, v and the output in the storage dtype.
  std::int64_t buffer_bytes_but_workspace(const Cell& cell) const {
    return checked_sum(state_bytes(cell), checked_mul(performer_projection_floats(shape_of(cell)), 4),
                       qkv_out_bytes(cell));
  }

  // The CPU prefill's workspace with `threads` threads; a decode step needs none.
  static std::int64_t cpu_workspace_bytes(const Cell& cell, std::int64_t threads) {
    if (cell.phase == Phase::decode) return 0;
    return checked_mul(performer_prefill_workspace_floats(shape_of(cell), static_cast<int>(threads)), 4);
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_performer() { return std::make_unique<Performer>(); }

ARCH_BENCH_REGISTER_MECHANISM(40, make_performer)

}  // namespace arch_bench
