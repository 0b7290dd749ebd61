#include "mechanisms/mamba2/mechanism.hpp"

#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/ssm_parameters.hpp"
#include "mechanisms/common/ssm_token_buffers.hpp"
#include "mechanisms/mamba2/capacity.hpp"
#include "mechanisms/mamba2/conformance.hpp"
#include "mechanisms/mamba2/cpu.hpp"
#include "mechanisms/mamba2/cuda.hpp"
#include "mechanisms/mamba2/cuda_plan.hpp"
#include "mechanisms/mamba2/inputs.hpp"
#include "mechanisms/mamba2/options.hpp"
#include "mechanisms/mamba2/reference.hpp"
#include "mechanisms/process_bytes.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

Mamba2Shape shape_of(const Cell& cell) {
  return {cell.batch, cell.heads, mamba2_groups_option().integer(cell.options), cell.head_dim,
          mamba2_state_size_option().integer(cell.options)};
}

std::int64_t chunk_of(const Cell& cell) { return mamba2_chunk_option().integer(cell.options); }

// The fp64 recurrent reference of row bh over its first `rows` tokens.
MatrixD reference_outputs(const Mamba2Inputs& inputs, std::int64_t bh, std::int64_t rows) {
  return mamba2_ssd_scan(inputs.head_sequence(bh, rows), inputs.head_parameters(bh % inputs.heads)).outputs;
}

// The layer's fp32 parameters in tracked buffers: A = -exp(A_log), dt_bias, D.
using ParameterBuffers = SsmParameterBuffers<Mamba2Parameters>;
// x, dt_raw, z per head and B, C per group, in storage T.
template <class T>
using TokenBuffers = SsmTokenBuffers<T, Mamba2Tokens<T>>;

// Tokens [first, first + count) of every row, in the kernels' layout and storage type.
template <class T>
struct StagedTokens {
  std::vector<T> x, dt_raw, z, B, C;
  Mamba2Tokens<T> view() const { return {x.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
};

template <class T>
StagedTokens<T> stage_tokens(const Mamba2Inputs& in, std::int64_t first, std::int64_t count) {
  const Mamba2TokenSlice slice = in.slice(first, count);
  const auto stored = [](const std::vector<float>& x) {
    std::vector<T> out(x.size());
    store(x.data(), static_cast<std::int64_t>(x.size()), out.data());
    return out;
  };
  return {stored(slice.x), stored(slice.dt_raw), stored(slice.z), stored(slice.B), stored(slice.C)};
}

// Tokens [first, first + count) of every row in tracked buffers (a decode cell's step input).
template <class T>
TokenBuffers<T> tracked_tokens(Allocator& allocator, const Mamba2Inputs& in, std::int64_t first, std::int64_t count) {
  const Mamba2TokenSlice slice = in.slice(first, count);
  return {allocator, slice.x, slice.dt_raw, slice.z, slice.B, slice.C};
}

// Decode: the state already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class Mamba2DecodeCell final : public PreparedCell {
 public:
  Mamba2DecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        chunk_(chunk_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_mamba2_inputs(cell, length_ + 1, seed)),
        params_(inputs_, allocator),
        state_(allocator, shape_.rows() * shape_.state_size * shape_.head_dim),
        token_(tracked_tokens<T>(allocator, inputs_, length_, 1)),
        out_(allocator, token_.x.size()) {
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    build_context_state();
  }

  void run() override {
    mamba2_decode_step(shape_, params_.view(), token_.view(), state_.data(), out_.data());
  }

  Accuracy check() const override {
    return check_decode_heads(out_.data(), shape_.rows(), shape_.head_dim, length_,
                              [&](std::int64_t bh, std::int64_t rows) { return reference_outputs(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), out_.byte_span()}, params_, token_);
  }

 private:
  // Runs the chunked prefill over the L context tokens (staging memory outside the tracked
  // allocator: it is set-up, not part of the decode cell) to leave their state in S.
  void build_context_state() {
    if (length_ == 0) return;
    const StagedTokens<T> context = stage_tokens<T>(inputs_, 0, length_);
    const int threads = omp_get_max_threads();
    std::vector<float> workspace(threads * mamba2_chunk_workspace_floats(shape_, chunk_));
    std::vector<T> out(context.x.size());
    mamba2_prefill_chunked(shape_, params_.view(), length_, chunk_, context.view(), state_.data(), workspace.data(),
                           threads, out.data());
  }

  Mamba2Shape shape_;
  std::int64_t chunk_;
  std::int64_t length_;
  Mamba2Inputs inputs_;
  ParameterBuffers params_;
  Buffer<float> state_;
  TokenBuffers<T> token_;
  Buffer<T> out_;
};

template <class T>
class Mamba2PrefillCell final : public PreparedCell {
 public:
  Mamba2PrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(shape_of(cell)),
        chunk_(chunk_of(cell)),
        threads_(omp_get_max_threads()),
        inputs_(make_mamba2_inputs(cell, cell.sequence_length, seed)),
        params_(inputs_, allocator),
        tokens_(allocator, inputs_.x, inputs_.dt_raw, inputs_.z, inputs_.B, inputs_.C),
        out_(allocator, inputs_.x.size()),
        state_(allocator, shape_.rows() * shape_.state_size * shape_.head_dim),
        workspace_(allocator, threads_ * mamba2_chunk_workspace_floats(shape_, chunk_)) {}

  void run() override {
    // A prefill starts a fresh sequence: the state is part of the timed work, zeroed first.
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    mamba2_prefill_chunked(shape_, params_.view(), inputs_.tokens, chunk_, tokens_.view(), state_.data(),
                           workspace_.data(), threads_, out_.data());
  }

  Accuracy check() const override {
    return check_prefill_heads(out_.data(), shape_.rows(), inputs_.tokens, shape_.head_dim,
                               [&](std::int64_t bh, std::int64_t rows) { return reference_outputs(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({out_.byte_span(), state_.byte_span(), workspace_.byte_span()}, params_, tokens_);
  }

 private:
  Mamba2Shape shape_;
  std::int64_t chunk_;
  int threads_;
  Mamba2Inputs inputs_;
  ParameterBuffers params_;
  TokenBuffers<T> tokens_;
  Buffer<T> out_;
  Buffer<float> state_, workspace_;
};

class Mamba2 final : public KernelMechanism {
 public:
  Mamba2()
      : KernelMechanism({.id = "mamba2",
                         .title = "Mamba-2 SSD: per head H = a_t H + dt x B^T, a_t = exp(dt A), fixed P x N fp32 "
                                  "state, B/C shared by n_groups",
                         .cuda_unsupported = mamba2_cuda_unsupported,
                         .prepare_cuda = ARCH_BENCH_CUDA_ONLY(prepare_mamba2_cuda),
                         .prepare_cpu = prepare_cpu_cells<Mamba2DecodeCell, Mamba2PrefillCell>,
                         .conformance = mamba2_conformance}) {}

  std::optional<std::string> unsupported(const Cell& cell) const override {
    const std::int64_t n = mamba2_state_size_option().integer(cell.options);
    const std::int64_t groups = mamba2_groups_option().integer(cell.options);
    const std::int64_t chunk = chunk_of(cell);
    if (n < 1 || n > kMamba2MaxStateSize) {
      return "mamba2 takes state_size (N) from 1 to " + std::to_string(kMamba2MaxStateSize) + ", got " +
             std::to_string(n);
    }
    if (cell.head_dim > kMamba2MaxHeadDim) {
      return "mamba2 takes head_dim (P) up to " + std::to_string(kMamba2MaxHeadDim) + ", got " +
             std::to_string(cell.head_dim);
    }
    if (groups < 1 || cell.heads % groups != 0) {
      return "mamba2 needs n_groups to divide the heads: n_groups " + std::to_string(groups) + ", heads " +
             std::to_string(cell.heads);
    }
    if (chunk < 1 || chunk > kMamba2MaxChunk) {
      return "mamba2 takes ssd_chunk from 1 to " + std::to_string(kMamba2MaxChunk) + ", got " + std::to_string(chunk);
    }
    return std::nullopt;
  }

  std::int64_t state_bytes(const Cell& cell) const override {
    // H (P x N) per head, fp32 whatever the storage dtype: fixed, independent of L.
    const Mamba2Shape shape = shape_of(cell);
    return checked_product(shape.batch, shape.heads, shape.head_dim, shape.state_size, 4);
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    const Mamba2Shape shape = shape_of(cell);
    const std::int64_t tokens = run_tokens(cell);
    std::int64_t workspace = 0;
    if (cell.phase == Phase::prefill) {
      workspace = checked_product(omp_get_max_threads(), mamba2_chunk_workspace_floats(shape, chunk_of(cell)), 4);
    }
    // The CUDA bf16 prefill's chunked SSD keeps one state per chunk (cuda_plan.hpp); counted on
    // every backend so a plan's prediction does not depend on where it runs.
    return checked_sum(state_bytes(cell), parameter_bytes(shape), sequence_bytes(cell, tokens), workspace,
                       mamba2_cuda_workspace_bytes(cell));
  }

  std::int64_t predicted_process_bytes(const Cell& cell) const override {
    const Mamba2Shape shape = shape_of(cell);
    const std::int64_t tokens = drawn_tokens(cell), n = shape.state_size, p = shape.head_dim;
    // Drawn, fp32: x, z and dt_raw per head and token, B and C per group and token.
    const std::int64_t drawn = checked_sum(checked_product(shape.rows(), tokens, checked_add(checked_mul(2, p), 1), 4),
                                           checked_product(2, shape.batch, shape.groups, tokens, n, 4));
    // A decode cell's context: sliced in fp32 (Mamba2Inputs::slice), staged in the storage dtype with
    // its output, and the prefill's workspace (counted together: an upper bound of what overlaps).
    std::int64_t staged = 0;
    if (cell.phase == Phase::decode && cell.sequence_length > 0) {
      const std::int64_t length = cell.sequence_length;
      const std::int64_t sliced = checked_sum(checked_product(shape.rows(), length, checked_add(checked_mul(2, p), 1), 4),
                                              checked_product(2, shape.batch, shape.groups, length, n, 4));
      staged = checked_sum(sliced, sequence_bytes(cell, length),
                           checked_product(omp_get_max_threads(), mamba2_chunk_workspace_floats(shape, chunk_of(cell)), 4));
    }
    // The check runs the reference one head at a time: x, z, B, C, dt widened to fp64, the outputs
    // and the final state.
    const std::int64_t checked = checked_product(8, checked_sum(checked_product(3, tokens, p), checked_product(2, tokens, n),
                                                                tokens, checked_mul(p, n)));
    return ProcessBytes{predicted_peak_bytes(cell), drawn, staged, checked}.total();
  }

  // Counting rules (exp, softplus and silu's sigmoid count as one FLOP each):
  //   decode, per head: per state element a s + u b (3), then s c into y (2) ......... 5 N P
  //                     per channel: dt x, D x + y (2), silu (3), the gate ........... 7 P
  //                     per head and token: bias add, softplus, dt A, exp ............ 4
  //   prefill, per chunk of R rows (pairs = R (R + 1) / 2): C B^T over the pairs (2 N), the decay
  //     mask (exp, *), its product with dt x (2 P); C S_0 and the state update (2 N P R each);
  //     the state's decay (N P); the scaled C and B (2 N R); per row dt x and the gate (8 P) and
  //     the token's dt (4).
  // Bytes: x, z read and out written per channel-token, dt_raw per head-token, B and C per group
  // and token (storage dtype); the fp32 parameters (3 per head) once; the fp32 state read and
  // written once per decode step, written once per prefill (it starts at zero).
  Cost cost(const Cell& cell) const override {
    const Mamba2Shape shape = shape_of(cell);
    const double rows = static_cast<double>(shape.rows());
    const double n = static_cast<double>(shape.state_size), p = static_cast<double>(shape.head_dim);
    const double state = static_cast<double>(state_bytes(cell)), params = static_cast<double>(parameter_bytes(shape));
    if (cell.phase == Phase::decode) {
      return {2 * state + params + static_cast<double>(sequence_bytes(cell, 1)), rows * (5 * n * p + 7 * p + 4)};
    }
    const std::int64_t length = cell.sequence_length, chunk = chunk_of(cell);
    double flops = 0;
    for (const std::int64_t r : {chunk, length % chunk}) {
      const double count = static_cast<double>(r == chunk ? length / chunk : (r > 0 ? 1 : 0));
      const double R = static_cast<double>(r), pairs = R * (R + 1) / 2;
      flops += count * (2 * (n + p + 1) * pairs + 4 * R * n * p + n * p + R * (2 * n + 8 * p + 4));
    }
    return {state + params + static_cast<double>(sequence_bytes(cell, length)), rows * flops};
  }

  std::vector<OptionSpec> option_specs() const override {
    return {mamba2_state_size_option(), mamba2_groups_option(), mamba2_chunk_option(), scalar_decay_state_pass_option()};
  }
  const CapacityProbe* capacity_probe(const MechanismOptions& options) const override {
    return &mamba2_capacity(mamba2_state_size_option().integer(options));
  }

 private:
  static std::int64_t parameter_bytes(const Mamba2Shape& shape) { return checked_product(3, shape.heads, 4); }

  // The sequence tensors of `tokens` tokens in the storage dtype: x, z, out, dt_raw, B, C.
  static std::int64_t sequence_bytes(const Cell& cell, std::int64_t tokens) {
    const Mamba2Shape shape = shape_of(cell);
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    return checked_sum(checked_product(shape.rows(), tokens, checked_add(checked_mul(3, shape.head_dim), 1), e),
                       checked_product(2, shape.batch, shape.groups, tokens, shape.state_size, e));
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_mamba2() { return std::make_unique<Mamba2>(); }

// After mamba (30) in `list`, the landscape and the reports, before performer (40).
ARCH_BENCH_REGISTER_MECHANISM(35, make_mamba2)

}  // namespace arch_bench
