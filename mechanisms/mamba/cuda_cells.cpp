// The CUDA prepared cells of Mamba, mirroring the CPU cells of mechanism.cpp: the same seeded inputs
// and parameters, device buffers from the backend's allocator, run() only enqueues on the backend's
// stream, check() downloads the output and compares it with the same fp64 reference.
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/mamba/options.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/mamba/check.hpp"
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/common/ssm_device_buffers.hpp"
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

using DeviceParameters = SsmDeviceParameters<MambaParameters>;

// Sequence inputs of tokens [first, first + count) on the device (any allocator: the cell's or a
// staging one).
template <class T>
SsmDeviceTokens<T, MambaTokens<T>> device_tokens(CudaBackend& cuda, Allocator& allocator, const MambaInputs& in,
                                                 std::int64_t first, std::int64_t count) {
  return {cuda,
          allocator,
          row_tokens(in, in.u, first, count),
          row_tokens(in, in.dt_raw, first, count),
          row_tokens(in, in.z, first, count),
          batch_tokens(in, in.B, first, count),
          batch_tokens(in, in.C, first, count)};
}

// The prefill kernel the cell's scan_kernel option picks (mamba_cuda_unsupported has refused a
// choice that does not take the cell's N before a cell is prepared).
MambaScanKernel scan_kernel_of(const Cell& cell) { return mamba_scan_kernel_of(cell).value_or(MambaScanKernel::lane); }

template <class T>
class MambaDecodeCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  MambaDecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : name_(mamba_gpu_kernel_name(cell)),
        kernel_(scan_kernel_of(cell)),
        cuda_(cuda_backend_of(backend)),
        shape_(mamba_shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_mamba_inputs(cell, length_ + 1, seed)),
        plan_(plan_mamba_decode(shape_)),
        params_(cuda_, inputs_),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.rows() * shape_.state_size)),
        token_(device_tokens<T>(cuda_, backend.allocator(), inputs_, length_, 1)),
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
    std::vector<ByteSpan> spans{state_.byte_span()};
    params_.add_spans(spans);
    token_.add_spans(spans);
    spans.push_back(out_.byte_span());
    return spans;
  }

  std::string gpu_kernel() const override { return name_; }

 private:
  // The CUDA prefill over the L context tokens leaves their state in h; its inputs are staging
  // memory outside the cell's allocator (set-up, not part of the decode cell), freed on return.
  void build_context_state() {
    if (length_ == 0) return;
    DeviceAllocator staging;
    const auto context = device_tokens<T>(cuda_, staging, inputs_, 0, length_);
    Buffer<T> out(staging, static_cast<std::size_t>(shape_.rows() * length_));
    const MambaPrefillPlan plan = plan_mamba_prefill(shape_, length_, cuda_.device().multiprocessors, kernel_);
    Buffer<float> workspace(staging, static_cast<std::size_t>(mamba_prefill_workspace_bytes(plan) / sizeof(float)));
    launch_mamba_prefill<T>(plan, params_.view(), context.view(), state_.data(), workspace.data(), out.data(),
                            cuda_.stream());
    cuda_.synchronize();
  }

  std::string name_;
  MambaScanKernel kernel_;
  CudaBackend& cuda_;
  MambaShape shape_;
  std::int64_t length_;
  MambaInputs inputs_;
  MambaDecodePlan plan_;
  DeviceParameters params_;
  Buffer<float> state_;
  SsmDeviceTokens<T, MambaTokens<T>> token_;
  Buffer<T> out_;
};

template <class T>
class MambaPrefillCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  MambaPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : name_(mamba_gpu_kernel_name(cell)),
        cuda_(cuda_backend_of(backend)),
        shape_(mamba_shape_of(cell)),
        inputs_(make_mamba_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_mamba_prefill(shape_, cell.sequence_length, cuda_.device().multiprocessors, scan_kernel_of(cell))),
        params_(cuda_, inputs_),
        tokens_(device_tokens<T>(cuda_, backend.allocator(), inputs_, 0, inputs_.tokens)),
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
    std::vector<ByteSpan> spans;
    params_.add_spans(spans);
    tokens_.add_spans(spans);
    spans.insert(spans.end(), {out_.byte_span(), state_.byte_span(), workspace_.byte_span()});
    return spans;
  }

  std::string gpu_kernel() const override { return name_; }

 private:
  std::string name_;
  CudaBackend& cuda_;
  MambaShape shape_;
  MambaInputs inputs_;
  MambaPrefillPlan plan_;  // split across the SMs at small batch (mamba_prefill_segments)
  DeviceParameters params_;
  SsmDeviceTokens<T, MambaTokens<T>> tokens_;
  Buffer<T> out_;
  Buffer<float> state_, workspace_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_mamba_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  return prepare_cuda_cell<MambaDecodeCudaCell, MambaPrefillCudaCell>(mamba_cuda_unsupported, cell, seed, backend);
}

}  // namespace arch_bench
