#include "mechanisms/mamba/mechanism.hpp"
#include "mechanisms/mamba/options.hpp"

#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/stop_request.hpp"
#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/ssm_parameters.hpp"
#include "mechanisms/common/ssm_token_buffers.hpp"
#include "mechanisms/mamba/capacity.hpp"
#include "mechanisms/mamba/check.hpp"
#include "mechanisms/mamba/cpu.hpp"
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/mamba/cuda_plan.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/mamba/reference.hpp"
#include "mechanisms/mamba/conformance.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

// The layer's fp32 parameters in tracked buffers: A = -exp(A_log), dt_bias, D.
using ParameterBuffers = SsmParameterBuffers<MambaParameters>;
// u, dt_raw, z per channel and B, C per batch element, in storage T.
template <class T>
using TokenBuffers = SsmTokenBuffers<T, MambaTokens<T>>;

// Decode: the state already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class MambaDecodeCell final : public PreparedCell {
 public:
  MambaDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(mamba_shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_mamba_inputs(cell, length_ + 1, seed)),
        params_(inputs_, allocator),
        state_(allocator, shape_.rows() * shape_.state_size),
        token_(allocator, shape_.rows(), shape_.rows(), shape_.batch * shape_.state_size),
        out_(allocator, shape_.rows()) {
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    build_context_state();
    for (std::int64_t r = 0; r < shape_.rows(); ++r) {
      store(inputs_.row(inputs_.u, r) + length_, 1, token_.x.data() + r);
      store(inputs_.row(inputs_.dt_raw, r) + length_, 1, token_.dt_raw.data() + r);
      store(inputs_.row(inputs_.z, r) + length_, 1, token_.z.data() + r);
    }
    const std::int64_t n = shape_.state_size;
    for (std::int64_t b = 0; b < shape_.batch; ++b) {
      store(inputs_.token(inputs_.B, b, length_), n, token_.B.data() + b * n);
      store(inputs_.token(inputs_.C, b, length_), n, token_.C.data() + b * n);
    }
  }

  void run() override {
    mamba_decode_step(shape_, params_.view(), token_.view(), state_.data(), out_.data());
  }

  Accuracy check() const override { return check_mamba_decode(inputs_, out_.data()); }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), out_.byte_span()}, params_, token_);
  }

 private:
  // Runs the prefill over the L context tokens (staging memory outside the tracked allocator: it is
  // set-up, not part of the decode cell) to leave their state in h.
  void build_context_state() {
    if (length_ == 0) return;
    const std::int64_t n = shape_.state_size, rows = shape_.rows();
    std::vector<T> u(rows * length_), dt_raw(u.size()), z(u.size()), out(u.size());
    std::vector<T> B(shape_.batch * length_ * n), C(B.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      store(inputs_.row(inputs_.u, r), length_, u.data() + r * length_);
      store(inputs_.row(inputs_.dt_raw, r), length_, dt_raw.data() + r * length_);
      store(inputs_.row(inputs_.z, r), length_, z.data() + r * length_);
    }
    for (std::int64_t b = 0; b < shape_.batch; ++b) {
      store(inputs_.token(inputs_.B, b, 0), length_ * n, B.data() + b * length_ * n);
      store(inputs_.token(inputs_.C, b, 0), length_ * n, C.data() + b * length_ * n);
    }
    const std::int64_t chunk = mamba_prefill_chunk(shape_, length_, omp_get_max_threads());
    std::vector<float> workspace(mamba_prefill_workspace_floats(shape_, length_, chunk));
    mamba_prefill_chunked(shape_, params_.view(), length_, chunk,
                          MambaTokens<T>{u.data(), dt_raw.data(), z.data(), B.data(), C.data()}, state_.data(),
                          workspace.data(), out.data());
  }

  MambaShape shape_;
  std::int64_t length_;
  MambaInputs inputs_;
  ParameterBuffers params_;
  Buffer<float> state_;
  TokenBuffers<T> token_;
  Buffer<T> out_;
};

template <class T>
class MambaPrefillCell final : public PreparedCell {
 public:
  MambaPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(mamba_shape_of(cell)),
        inputs_(make_mamba_inputs(cell, cell.sequence_length, seed)),
        chunk_(mamba_prefill_chunk(shape_, inputs_.tokens, omp_get_max_threads())),
        params_(inputs_, allocator),
        tokens_(allocator, inputs_.u, inputs_.dt_raw, inputs_.z, inputs_.B, inputs_.C),
        out_(allocator, inputs_.u.size()),
        state_(allocator, shape_.rows() * shape_.state_size),
        workspace_(allocator, mamba_prefill_workspace_floats(shape_, inputs_.tokens, chunk_)) {}

  void run() override {
    // A prefill starts a fresh sequence: the state is part of the timed work, zeroed first.
    std::fill(state_.span().begin(), state_.span().end(), 0.0f);
    mamba_prefill_chunked(shape_, params_.view(), inputs_.tokens, chunk_, tokens_.view(), state_.data(),
                          workspace_.data(), out_.data());
  }

  Accuracy check() const override { return check_mamba_prefill(inputs_, out_.data()); }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({out_.byte_span(), state_.byte_span(), workspace_.byte_span()}, params_, tokens_);
  }

 private:
  MambaShape shape_;
  MambaInputs inputs_;
  std::int64_t chunk_;
  ParameterBuffers params_;
  TokenBuffers<T> tokens_;
  Buffer<T> out_;
  Buffer<float> state_, workspace_;
};

class Mamba final : public KernelMechanism {
 public:
  Mamba()
      : KernelMechanism({.id = "mamba",
                         .title = "Mamba selective scan (S6), fixed d_inner x N fp32 state, d_inner = heads * head_dim",
                         .cuda_unsupported = mamba_cuda_unsupported,
                         .prepare_cuda = ARCH_BENCH_CUDA_ONLY(prepare_mamba_cuda),
                         .prepare_cpu = prepare_cpu_cells<MambaDecodeCell, MambaPrefillCell>,
                         .conformance = mamba_conformance}) {}

  std::optional<std::string> unsupported(const Cell& cell) const override {
    const std::int64_t n = mamba_state_size_option().integer(cell.options);
    if (n < 1 || n > kMambaMaxStateSize) {
      return "mamba takes state_size (N) from 1 to " + std::to_string(kMambaMaxStateSize) + ", got " +
             std::to_string(n);
    }
    return std::nullopt;
  }

  std::int64_t state_bytes(const Cell& cell) const override {
    // h [batch, d_inner, N] in fp32 whatever the storage dtype: fixed, independent of L.
    const MambaShape shape = mamba_shape_of(cell);
    return checked_product(shape.batch, shape.channels, shape.state_size, 4);
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    const MambaShape shape = mamba_shape_of(cell);
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    const std::int64_t tokens = run_tokens(cell);
    std::int64_t workspace = 0;
    if (cell.phase == Phase::prefill) {
      // The backend's workspace, whichever runs the cell: the CPU's chunked scan (its (a, b) pairs),
      // or the CUDA split prefill's (row, segment) states and dt sums on the device with the most
      // segments (cuda_plan.hpp; the cell's prediction is made before a device is known).
      const std::int64_t chunk = mamba_prefill_chunk(shape, tokens, omp_get_max_threads());
      const MambaScanKernel kernel = mamba_scan_kernel_of(cell).value_or(MambaScanKernel::lane);
      workspace = std::max(checked_mul(mamba_prefill_workspace_floats(shape, tokens, chunk), 4),
                           mamba_prefill_cuda_workspace_bytes(shape, tokens, kernel));
    }
    // state + parameters + u, dt_raw, z, out per channel-token + B, C per token + workspace.
    return checked_sum(state_bytes(cell), parameter_bytes(shape), checked_product(4, shape.batch, shape.channels, tokens, e),
                       checked_product(2, shape.batch, tokens, shape.state_size, e), workspace);
  }

  std::int64_t predicted_process_bytes(const Cell& cell) const override {
    const MambaShape shape = mamba_shape_of(cell);
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    const std::int64_t tokens = drawn_tokens(cell), n = shape.state_size;
    // Drawn: u, dt_raw, z per channel and token, B, C per token, fp32.
    const std::int64_t drawn = checked_sum(checked_product(3, shape.batch, shape.channels, tokens, 4),
                                           checked_product(2, shape.batch, tokens, n, 4));
    // A decode cell's context: u, dt_raw, z, out and B, C staged, plus the prefill's workspace.
    std::int64_t staged = 0;
    if (cell.phase == Phase::decode && cell.sequence_length > 0) {
      const std::int64_t length = cell.sequence_length;
      const std::int64_t chunk = mamba_prefill_chunk(shape, length, omp_get_max_threads());
      staged = checked_sum(checked_product(4, shape.batch, shape.channels, length, e),
                           checked_product(2, shape.batch, length, n, e),
                           checked_mul(mamba_prefill_workspace_floats(shape, length, chunk), 4));
    }
    // The check runs the reference one batch element at a time: its u, dt_raw, z, B, C in fp64, the
    // outputs and the scan's scratch ([tokens, d_inner] each), and the final state.
    const std::int64_t checked = checked_sum(checked_product(5, tokens, shape.channels, 8),
                                             checked_product(2, tokens, n, 8), checked_product(shape.channels, n, 8));
    return ProcessBytes{predicted_peak_bytes(cell), drawn, staged, checked}.total();
  }

  // Counting rules (transcendentals exp, softplus and the sigmoid of silu count as one FLOP each):
  //   per channel-token and state entry: dt*A, exp, *h, du*B, +, C*h, += ........ 7 N
  //   per channel-token: dt_raw + bias, softplus, dt*u, D*u, + y, silu (3), *gate .. 9
  // Bytes: u, dt_raw, z read and out written per channel-token (storage dtype); B_t, C_t read per
  // token (shared by the channels); the fp32 parameters A (d_inner x N), dt_bias, D read once; the
  // fp32 state read and written once per decode step, written once per prefill (it starts at zero).
  Cost cost(const Cell& cell) const override {
    const MambaShape shape = mamba_shape_of(cell);
    const double e = static_cast<double>(dtype_bytes(cell.dtype));
    const double rows = static_cast<double>(shape.rows());
    const double n = static_cast<double>(shape.state_size);
    const double batch = static_cast<double>(shape.batch);
    const double state = static_cast<double>(state_bytes(cell));
    const double params = static_cast<double>(parameter_bytes(shape));
    if (cell.phase == Phase::decode) {
      return {2 * state + params + 4 * rows * e + 2 * batch * n * e, rows * (7 * n + 9)};
    }
    const double length = static_cast<double>(cell.sequence_length);
    Cost cost{state + params + 4 * rows * length * e + 2 * batch * length * n * e, rows * length * (7 * n + 9)};
    const std::int64_t chunk = mamba_prefill_chunk(shape, cell.sequence_length, omp_get_max_threads());
    const std::int64_t workspace = mamba_prefill_workspace_floats(shape, cell.sequence_length, chunk);
    if (workspace > 0) {
      // Split time axis: phase 1 repeats the state update over all but the last chunk without the
      // output (5 N + 3 per channel-token: dt*A, exp, *h, du*B, +; bias add, softplus, dt*u), and
      // the (a, b) pairs are written, then read and rewritten by the carry scan and read back.
      const std::int64_t chunks = (cell.sequence_length + chunk - 1) / chunk;
      const double folded = static_cast<double>((chunks - 1) * chunk);
      cost.flops += rows * folded * (5 * n + 3);
      cost.bytes_moved += 3 * static_cast<double>(workspace) * 4;
    }
    return cost;
  }

  std::vector<OptionSpec> option_specs() const override {
    return {mamba_state_size_option(), mamba_scan_kernel_option()};
  }
  const CapacityProbe* capacity_probe(const MechanismOptions& options) const override {
    return &mamba_capacity(mamba_state_size_option().integer(options));
  }

 private:
  static std::int64_t parameter_bytes(const MambaShape& shape) {
    return checked_mul(checked_add(checked_mul(shape.channels, shape.state_size), checked_mul(2, shape.channels)), 4);
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_mamba() { return std::make_unique<Mamba>(); }

ARCH_BENCH_REGISTER_MECHANISM(30, make_mamba)

}  // namespace arch_bench
