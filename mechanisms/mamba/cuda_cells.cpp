// The CUDA prepared cells of Mamba, mirroring the CPU cells of mechanism.cpp: the same seeded inputs
// and parameters, device buffers from the backend's allocator, run() only enqueues on the backend's
// stream, check() downloads the output and compares it with the same fp64 reference.
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/mamba/options.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/mamba/check.hpp"
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/mechanism.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

// Tokens [first, first + count) of every row of a channel-major [rows, tokens] tensor.
std::vector<float> row_tokens(const MambaInputs& in, const std::vector<float>& x, std::int64_t first,
                              std::int64_t count) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(in.rows() * count));
  for (std::int64_t r = 0; r < in.rows(); ++r) out.insert(out.end(), in.row(x, r) + first, in.row(x, r) + first + count);
  return out;
}
// Tokens [first, first + count) of every batch element of a token-major [batch, tokens, N] tensor.
std::vector<float> batch_tokens(const MambaInputs& in, const std::vector<float>& x, std::int64_t first,
                                std::int64_t count) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(in.batch * count * in.state_size));
  for (std::int64_t b = 0; b < in.batch; ++b) {
    out.insert(out.end(), in.token(x, b, first), in.token(x, b, first) + count * in.state_size);
  }
  return out;
}

// The layer's fp32 parameters on the device.
struct DeviceParameters {
  DeviceParameters(CudaBackend& cuda, const MambaInputs& in)
      : A(cuda.allocator(), in.A_log.size()), dt_bias(cuda.allocator(), in.dt_bias.size()), D(cuda.allocator(), in.D.size()) {
    const std::vector<float> a = in.A();
    upload<float>(cuda, a.data(), static_cast<std::int64_t>(a.size()), A.data());
    upload<float>(cuda, in.dt_bias.data(), static_cast<std::int64_t>(in.dt_bias.size()), dt_bias.data());
    upload<float>(cuda, in.D.data(), static_cast<std::int64_t>(in.D.size()), D.data());
  }
  MambaParameters view() const { return {A.data(), dt_bias.data(), D.data()}; }
  Buffer<float> A, dt_bias, D;
};

// Sequence inputs of `count` tokens on the device (any allocator: the cell's or a staging one).
template <class T>
struct DeviceTokens {
  DeviceTokens(CudaBackend& cuda, Allocator& allocator, const MambaInputs& in, std::int64_t first, std::int64_t count)
      : u(allocator, static_cast<std::size_t>(in.rows() * count)),
        dt_raw(allocator, u.size()),
        z(allocator, u.size()),
        B(allocator, static_cast<std::size_t>(in.batch * count * in.state_size)),
        C(allocator, B.size()) {
    const auto per_row = static_cast<std::int64_t>(u.size()), per_batch = static_cast<std::int64_t>(B.size());
    upload<T>(cuda, row_tokens(in, in.u, first, count).data(), per_row, u.data());
    upload<T>(cuda, row_tokens(in, in.dt_raw, first, count).data(), per_row, dt_raw.data());
    upload<T>(cuda, row_tokens(in, in.z, first, count).data(), per_row, z.data());
    upload<T>(cuda, batch_tokens(in, in.B, first, count).data(), per_batch, B.data());
    upload<T>(cuda, batch_tokens(in, in.C, first, count).data(), per_batch, C.data());
  }
  MambaTokens<T> view() const { return {u.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  Buffer<T> u, dt_raw, z, B, C;
};

template <class T>
class MambaDecodeCudaCell final : public PreparedCell {
 public:
  MambaDecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        shape_(mamba_shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_mamba_inputs(cell, length_ + 1, seed)),
        plan_(plan_mamba_decode(shape_)),
        params_(cuda_, inputs_),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.rows() * shape_.state_size)),
        token_(cuda_, backend.allocator(), inputs_, length_, 1),
        out_(backend.allocator(), static_cast<std::size_t>(shape_.rows())) {
    zero_async(cuda_, state_.data(), state_.bytes());
    build_context_state();
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    launch_mamba_decode<T>(plan_, params_.view(), token_.view(), state_.data(), out_.data(), cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_mamba_decode(inputs_, out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return {state_.byte_span(),     params_.A.byte_span(), params_.dt_bias.byte_span(), params_.D.byte_span(),
            token_.u.byte_span(),   token_.dt_raw.byte_span(), token_.z.byte_span(),    token_.B.byte_span(),
            token_.C.byte_span(),   out_.byte_span()};
  }

 private:
  // The CUDA prefill over the L context tokens leaves their state in h; its inputs are staging
  // memory outside the cell's allocator (set-up, not part of the decode cell), freed on return.
  void build_context_state() {
    if (length_ == 0) return;
    DeviceAllocator staging;
    const DeviceTokens<T> context(cuda_, staging, inputs_, 0, length_);
    Buffer<T> out(staging, static_cast<std::size_t>(shape_.rows() * length_));
    const MambaPrefillPlan plan = plan_mamba_prefill(shape_, length_, cuda_.device().multiprocessors);
    Buffer<float> workspace(staging, static_cast<std::size_t>(mamba_prefill_workspace_bytes(plan) / sizeof(float)));
    launch_mamba_prefill<T>(plan, params_.view(), context.view(), state_.data(), workspace.data(), out.data(),
                            cuda_.stream());
    cuda_.synchronize();
  }

  CudaBackend& cuda_;
  MambaShape shape_;
  std::int64_t length_;
  MambaInputs inputs_;
  MambaDecodePlan plan_;
  DeviceParameters params_;
  Buffer<float> state_;
  DeviceTokens<T> token_;
  Buffer<T> out_;
};

template <class T>
class MambaPrefillCudaCell final : public PreparedCell {
 public:
  MambaPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        shape_(mamba_shape_of(cell)),
        inputs_(make_mamba_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_mamba_prefill(shape_, cell.sequence_length, cuda_.device().multiprocessors)),
        params_(cuda_, inputs_),
        tokens_(cuda_, backend.allocator(), inputs_, 0, inputs_.tokens),
        out_(backend.allocator(), inputs_.u.size()),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.rows() * shape_.state_size)),
        // mamba_prefill_workspace_bytes: what predicted_peak_bytes bounds (mamba_prefill_cuda_workspace_bytes).
        workspace_(backend.allocator(), static_cast<std::size_t>(mamba_prefill_workspace_bytes(plan_) / sizeof(float))) {
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    // A prefill starts a fresh sequence: zeroing the state is part of the timed work.
    zero_async(cuda_, state_.data(), state_.bytes());
    launch_mamba_prefill<T>(plan_, params_.view(), tokens_.view(), state_.data(), workspace_.data(), out_.data(),
                            cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_mamba_prefill(inputs_, out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return {params_.A.byte_span(), params_.dt_bias.byte_span(), params_.D.byte_span(), tokens_.u.byte_span(),
            tokens_.dt_raw.byte_span(), tokens_.z.byte_span(),  tokens_.B.byte_span(), tokens_.C.byte_span(),
            out_.byte_span(),      state_.byte_span(),        workspace_.byte_span()};
  }

 private:
  CudaBackend& cuda_;
  MambaShape shape_;
  MambaInputs inputs_;
  MambaPrefillPlan plan_;  // split across the SMs at small batch (mamba_prefill_segments)
  DeviceParameters params_;
  DeviceTokens<T> tokens_;
  Buffer<T> out_;
  Buffer<float> state_, workspace_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_mamba_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  if (auto why = mamba_cuda_unsupported(cell)) throw CellFailure("mechanism_error", *why);  // the plan skips these first
  return prepare_cell<MambaDecodeCudaCell, MambaPrefillCudaCell>(cell, seed, backend);
}

}  // namespace arch_bench
