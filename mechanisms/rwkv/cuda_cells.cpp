// The CUDA prepared cells of the three RWKV generations, mirroring the CPU cells of cells.hpp: the
// same seeded inputs and parameters, device buffers from the backend's allocator, run() only
// enqueues on the backend's stream (no synchronisation, allocation or copy), check() downloads the
// output and compares it with the same fp64 reference.
#include <array>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/checked_size.hpp"
#include "core/errors.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/input_buffers.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/reference_outputs.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_cuda.hpp"

namespace arch_bench {

namespace {

std::int64_t state_floats(RwkvVersion version, std::int64_t batch_heads, std::int64_t dim) {
  return version == RwkvVersion::v4 ? checked_product(batch_heads, 3, dim) : checked_product(batch_heads, dim, dim);
}

// A fresh state on the stream: rwkv4's p starts at -1e38 (a kernel), rwkv6/7's S at zero.
void reset_state(CudaBackend& cuda, const RwkvScanPlan& plan, Buffer<float>& state) {
  if (plan.version == RwkvVersion::v4) {
    launch_rwkv4_reset(plan, state.data(), cuda.stream());
  } else {
    zero_async(cuda, state.data(), state.bytes());
  }
}

// The generation's fp32 parameters on the device (only those it reads).
struct DeviceParameters {
  DeviceParameters(CudaBackend& cuda, const RwkvInputs& in) {
    if (in.version == RwkvVersion::v4) {
      w = Buffer<float>(cuda.allocator(), in.w.size());
      upload<float>(cuda, in.w.data(), static_cast<std::int64_t>(in.w.size()), w.data());
    }
    if (in.version != RwkvVersion::v7) {
      u = Buffer<float>(cuda.allocator(), in.u.size());
      upload<float>(cuda, in.u.data(), static_cast<std::int64_t>(in.u.size()), u.data());
    }
  }
  RwkvParameters view() const { return {w.data(), u.data()}; }
  void add_spans(std::vector<ByteSpan>& spans) const {
    if (w.size() > 0) spans.push_back(w.byte_span());
    if (u.size() > 0) spans.push_back(u.byte_span());
  }
  Buffer<float> w, u;
};

// Tokens [first, first + count) of every head of the inputs the generation reads, on the device
// ([batch_heads, count, dim]; any allocator: the cell's or a staging one).
template <class T>
struct DeviceTokens : RwkvInputBuffers<T> {
  DeviceTokens(CudaBackend& cuda, Allocator& allocator, const RwkvInputs& in, std::int64_t first, std::int64_t count)
      : RwkvInputBuffers<T>(in.version) {
    const std::int64_t elements = checked_product(in.batch_heads, count, in.dim);
    std::vector<float> rows;
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (!this->used[i]) continue;
      rows.clear();
      rows.reserve(checked_count(elements));
      for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
        const float* begin = in.at(static_cast<RwkvInput>(i), bh, first);
        rows.insert(rows.end(), begin, begin + count * in.dim);
      }
      this->buffers[i] = Buffer<T>(allocator, checked_count(elements));
      upload<T>(cuda, rows.data(), elements, this->buffers[i].data());
    }
  }
};

// Decode: the state already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class RwkvDecodeCudaCell final : public PreparedCell {
 public:
  RwkvDecodeCudaCell(RwkvVersion version, const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        length_(cell.sequence_length),
        inputs_(make_rwkv_inputs(cell, length_ + 1, seed, version)),
        plan_(plan_rwkv_scan(version, cell.batch_heads(), cell.heads, 1, cell.head_dim,
                             cuda_.device().multiprocessors)),
        params_(cuda_, inputs_),
        state_(backend.allocator(), checked_count(state_floats(version, cell.batch_heads(), cell.head_dim))),
        token_(cuda_, backend.allocator(), inputs_, length_, 1),
        out_(backend.allocator(), checked_count(checked_mul(cell.batch_heads(), cell.head_dim))) {
    reset_state(cuda_, plan_, state_);
    build_context_state();
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    launch_rwkv_scan<T>(plan_, params_.view(), token_.view(), state_.data(), out_.data(), cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_decode_heads(out.data(), inputs_.batch_heads, inputs_.dim, length_,
                              [&](std::int64_t bh, std::int64_t rows) { return rwkv_reference_outputs(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), out_.byte_span()}, params_, token_);
  }

 private:
  // The CUDA prefill over the L context tokens leaves their state in place; its inputs and output
  // are staging memory outside the cell's allocator (set-up, not part of the decode cell, whose peak
  // must stay fixed as L grows, as on the CPU), freed on return.
  void build_context_state() {
    if (length_ == 0) return;
    DeviceAllocator staging;
    const DeviceTokens<T> context(cuda_, staging, inputs_, 0, length_);
    Buffer<T> out(staging, checked_count(checked_product(inputs_.batch_heads, length_, inputs_.dim)));
    const RwkvScanPlan plan = plan_rwkv_scan(plan_.version, inputs_.batch_heads, inputs_.heads, length_, inputs_.dim,
                                             cuda_.device().multiprocessors);
    launch_rwkv_scan<T>(plan, params_.view(), context.view(), state_.data(), out.data(), cuda_.stream());
    cuda_.synchronize();
  }

  CudaBackend& cuda_;
  std::int64_t length_;
  RwkvInputs inputs_;
  RwkvScanPlan plan_;
  DeviceParameters params_;
  Buffer<float> state_;
  DeviceTokens<T> token_;
  Buffer<T> out_;
};

template <class T>
class RwkvPrefillCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  RwkvPrefillCudaCell(RwkvVersion version, const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        inputs_(make_rwkv_inputs(cell, cell.sequence_length, seed, version)),
        plan_(plan_rwkv_scan(version, cell.batch_heads(), cell.heads, cell.sequence_length, cell.head_dim,
                             cuda_.device().multiprocessors)),
        params_(cuda_, inputs_),
        tokens_(cuda_, backend.allocator(), inputs_, 0, inputs_.tokens),
        out_(backend.allocator(), inputs_.sequence[kRwkvK].size()),
        state_(backend.allocator(), checked_count(state_floats(version, cell.batch_heads(), cell.head_dim))) {
    if constexpr (std::is_same_v<T, bf16>) {
      if (version == RwkvVersion::v6 && rwkv6_cuda_prefill_is_chunked(cell)) {
        // The workspace is the cell's, from the backend's allocator, so the peak counts it
        // (rwkv6_cuda_workspace_bytes); run() allocates nothing.
        chunked_ = plan_rwkv6_chunk(cell.batch_heads(), cell.heads, cell.sequence_length, cell.head_dim);
        configure_rwkv6_chunked(*chunked_);
        workspace_ = Buffer<float>(backend.allocator(), checked_count(chunked_->workspace_floats()));
      }
      if (version == RwkvVersion::v7 && rwkv7_cuda_prefill_is_chunked(cell)) {
        // As rwkv6's: the workspace counted in the peak (rwkv7_cuda_workspace_bytes).
        chunked7_ = plan_rwkv7_chunk(cell.batch_heads(), cell.sequence_length, cell.head_dim,
                                     cuda_.device().multiprocessors);
        configure_rwkv7_chunked(*chunked7_);
        workspace_ = Buffer<float>(backend.allocator(), checked_count(chunked7_->workspace_floats()));
      }
    }
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    // A prefill starts a fresh sequence: resetting the state is part of the timed work.
    reset_state(cuda_, plan_, state_);
    if constexpr (std::is_same_v<T, bf16>) {
      if (chunked_) {
        launch_rwkv6_chunked(*chunked_, params_.view(), tokens_.view(), state_.data(), workspace_.data(), out_.data(),
                             cuda_.stream());
        return;
      }
      if (chunked7_) {
        launch_rwkv7_chunked(*chunked7_, tokens_.view(), state_.data(), workspace_.data(), out_.data(), cuda_.stream());
        return;
      }
    }
    launch_rwkv_scan<T>(plan_, params_.view(), tokens_.view(), state_.data(), out_.data(), cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_prefill_heads(out.data(), inputs_.batch_heads, inputs_.tokens, inputs_.dim,
                               [&](std::int64_t bh, std::int64_t rows) { return rwkv_reference_outputs(inputs_, bh, rows); });
  }

  // The prefill has two paths (the chunkwise tensor-core form for bf16, the recurrence otherwise):
  // the row says which ran.
  std::string gpu_kernel() const override {
    if (chunked_) return "chunkwise wmma_bf16 (64-token chunks of 16-token sub-chunks: state, prefix, output kernels)";
    if (chunked7_) return "chunkwise wmma_bf16 (32-token chunks: prepare and pass kernels)";
    return "recurrent scan simt";
  }

  std::vector<ByteSpan> buffers() const override {
    if (chunked_ || chunked7_) {
      return cell_spans({state_.byte_span(), out_.byte_span(), workspace_.byte_span()}, params_, tokens_);
    }
    return cell_spans({state_.byte_span(), out_.byte_span()}, params_, tokens_);
  }

 private:
  CudaBackend& cuda_;
  RwkvInputs inputs_;
  RwkvScanPlan plan_;
  DeviceParameters params_;
  DeviceTokens<T> tokens_;
  Buffer<T> out_;
  Buffer<float> state_;
  std::optional<Rwkv6ChunkPlan> chunked_;  // set: rwkv6's bf16 prefill runs chunkwise on tensor cores
  std::optional<Rwkv7ChunkPlan> chunked7_;  // set: rwkv7's bf16 prefill runs chunkwise on tensor cores
  Buffer<float> workspace_;                 // the chunkwise workspace (empty otherwise)
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_rwkv_cuda(RwkvVersion version, const Cell& cell, std::uint64_t seed,
                                                Backend& backend) {
  require_cuda_supported(rwkv_cuda_unsupported(version, cell));
  const bool bf = cell.dtype == DType::bfloat16;
  if (cell.phase == Phase::decode) {
    if (bf) return std::make_unique<RwkvDecodeCudaCell<bf16>>(version, cell, seed, backend);
    return std::make_unique<RwkvDecodeCudaCell<float>>(version, cell, seed, backend);
  }
  if (bf) return std::make_unique<RwkvPrefillCudaCell<bf16>>(version, cell, seed, backend);
  return std::make_unique<RwkvPrefillCudaCell<float>>(version, cell, seed, backend);
}

}  // namespace arch_bench
