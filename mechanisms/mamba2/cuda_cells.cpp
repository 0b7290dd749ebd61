// The CUDA prepared cells of mamba2, mirroring the CPU cells of mechanism.cpp: the same seeded inputs
// and parameters, device buffers from the backend's allocator, run() only enqueues on the backend's
// stream, check() downloads the output and compares it with the same fp64 reference. Compiled, not
// yet run on a GPU.
#include <string>
#include <type_traits>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/errors.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/chunk_scalar_decay_workspace.hpp"
#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/common/ssm_device_buffers.hpp"
#include "mechanisms/mamba2/cuda.hpp"
#include "mechanisms/mamba2/inputs.hpp"
#include "mechanisms/mamba2/options.hpp"
#include "mechanisms/mamba2/reference.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

namespace {

Mamba2Shape shape_of(const Cell& cell) {
  return {cell.batch, cell.heads, mamba2_groups_option().integer(cell.options), cell.head_dim,
          mamba2_state_size_option().integer(cell.options)};
}

MatrixD reference_outputs(const Mamba2Inputs& inputs, std::int64_t bh, std::int64_t rows) {
  return mamba2_ssd_scan(inputs.head_sequence(bh, rows), inputs.head_parameters(bh % inputs.heads)).outputs;
}

using DeviceParameters = SsmDeviceParameters<Mamba2Parameters>;

// Sequence inputs of the slice's tokens on the device (any allocator: the cell's or a staging one).
template <class T>
SsmDeviceTokens<T, Mamba2Tokens<T>> device_tokens(CudaBackend& cuda, Allocator& allocator,
                                                  const Mamba2TokenSlice& slice) {
  return {cuda, allocator, slice.x, slice.dt_raw, slice.z, slice.B, slice.C};
}

template <class T>
class Mamba2DecodeCudaCell final : public PreparedCell {
 public:
  Mamba2DecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        shape_(shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_mamba2_inputs(cell, length_ + 1, seed)),
        plan_(plan_mamba2_cuda(shape_, 1)),
        params_(cuda_, inputs_),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.rows() * shape_.state_size * shape_.head_dim)),
        token_(device_tokens<T>(cuda_, backend.allocator(), inputs_.slice(length_, 1))),
        out_(backend.allocator(), static_cast<std::size_t>(shape_.rows() * shape_.head_dim)) {
    zero_async(cuda_, state_.data(), state_.bytes());
    build_context_state();
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    launch_mamba2_scan<T>(plan_, params_.view(), token_.view(), state_.data(), out_.data(), cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_decode_heads(out.data(), shape_.rows(), shape_.head_dim, length_,
                              [&](std::int64_t bh, std::int64_t rows) { return reference_outputs(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    std::vector<ByteSpan> spans{state_.byte_span()};
    params_.add_spans(spans);
    token_.add_spans(spans);
    spans.push_back(out_.byte_span());
    return spans;
  }

 private:
  // The CUDA scan over the L context tokens leaves their state in S; its inputs are staging memory
  // outside the cell's allocator (set-up, not part of the decode cell), freed on return.
  void build_context_state() {
    if (length_ == 0) return;
    DeviceAllocator staging;
    const auto context = device_tokens<T>(cuda_, staging, inputs_.slice(0, length_));
    Buffer<T> out(staging, static_cast<std::size_t>(shape_.rows() * length_ * shape_.head_dim));
    launch_mamba2_scan<T>(plan_mamba2_cuda(shape_, length_), params_.view(), context.view(), state_.data(), out.data(),
                          cuda_.stream());
    cuda_.synchronize();
  }

  CudaBackend& cuda_;
  Mamba2Shape shape_;
  std::int64_t length_;
  Mamba2Inputs inputs_;
  Mamba2CudaPlan plan_;
  DeviceParameters params_;
  Buffer<float> state_;
  SsmDeviceTokens<T, Mamba2Tokens<T>> token_;
  Buffer<T> out_;
};

template <class T>
class Mamba2PrefillCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  Mamba2PrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        shape_(shape_of(cell)),
        inputs_(make_mamba2_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_mamba2_cuda(shape_, cell.sequence_length)),
        params_(cuda_, inputs_),
        tokens_(device_tokens<T>(cuda_, backend.allocator(), inputs_.slice(0, inputs_.tokens))),
        out_(backend.allocator(), inputs_.x.size()),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.rows() * shape_.state_size * shape_.head_dim)) {
    if constexpr (std::is_same_v<T, bf16>) {
      if (mamba2_cuda_prefill_is_chunked(cell)) {  // mamba2_cuda_workspace_bytes counts the workspace
        const int multiprocessors = cuda_.device().multiprocessors;
        chunked_ = ChunkScalarDecayWorkspace(mamba2_chunked_prefill_plan(cell, multiprocessors), backend.allocator());
        configure_mamba2_chunked_prefill(*chunked_.plan);
        name_ = scalar_decay_prefill_kernel_name(*chunked_.plan, scalar_decay_state_pass_choice_of(cell), multiprocessors);
      }
    }
    poison(cuda_, out_.data(), out_.bytes());
  }

  std::string gpu_kernel() const override { return name_; }

  void run() override {
    // A prefill starts a fresh sequence: zeroing the state is part of the timed work.
    zero_async(cuda_, state_.data(), state_.bytes());
    if constexpr (std::is_same_v<T, bf16>) {
      if (chunked_.plan) {
        launch_mamba2_chunked_prefill(*chunked_.plan, plan_, params_.view(), tokens_.view(), state_.data(),
                                      out_.data(), chunked_.chunk_states.data(), chunked_.chunk_log_decay.data(),
                                      cuda_.stream());
        return;
      }
    }
    launch_mamba2_scan<T>(plan_, params_.view(), tokens_.view(), state_.data(), out_.data(), cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_prefill_heads(out.data(), shape_.rows(), inputs_.tokens, shape_.head_dim,
                               [&](std::int64_t bh, std::int64_t rows) { return reference_outputs(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    std::vector<ByteSpan> spans;
    params_.add_spans(spans);
    tokens_.add_spans(spans);
    spans.insert(spans.end(), {out_.byte_span(), state_.byte_span()});
    chunked_.add_spans(spans);
    return spans;
  }

 private:
  CudaBackend& cuda_;
  Mamba2Shape shape_;
  Mamba2Inputs inputs_;
  Mamba2CudaPlan plan_;
  DeviceParameters params_;
  SsmDeviceTokens<T, Mamba2Tokens<T>> tokens_;
  Buffer<T> out_;
  Buffer<float> state_;
  ChunkScalarDecayWorkspace chunked_;  // the chunked SSD's, for a bf16 prefill on tensor cores
  std::string name_ = "prefill recurrence (fp32 SIMT)";
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_mamba2_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  return prepare_cuda_cell<Mamba2DecodeCudaCell, Mamba2PrefillCudaCell>(mamba2_cuda_unsupported, cell, seed, backend);
}

}  // namespace arch_bench
