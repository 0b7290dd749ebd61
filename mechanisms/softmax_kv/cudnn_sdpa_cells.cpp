// softmax_kv's prepared cells on cuDNN's fused attention: the inputs, cache layout, poisoning and fp64
// checks of the hand kernels' cells (cuda_cells.cpp), with the attention itself enqueued by cuDNN.
// Graphs, plans and workspace are built at prepare time; run() only enqueues on the backend's stream.
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/cuda_check.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/softmax_kv/check.hpp"
#include "mechanisms/softmax_kv/cuda_decode_token.hpp"
#include "mechanisms/softmax_kv/cudnn_sdpa.hpp"

namespace arch_bench {

namespace {

std::size_t workspace_floats(const CudnnSdpa& sdpa) {
  return static_cast<std::size_t>((sdpa.workspace_bytes() + 3) / 4);
}

// Decode: the cache holds the context of L tokens in rows 0..L-1 of L + 1; the step writes the new
// token's k/v into row L (as the hand kernel's step does) and attends its one query over all L + 1
// rows. Re-running the step rewrites the same slot, so every sample does identical work.
class SoftmaxDecodeCudnnCell final : public PreparedCell, public NamesGpuKernel {
 public:
  SoftmaxDecodeCudnnCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend)
      : backend_(backend),
        length_(cell.sequence_length),
        dim_(cell.head_dim),
        kv_heads_(batch_kv_heads_of(cell)),
        group_(query_group_of(cell)),
        sdpa_(CudnnSdpaShape{.batch = cell.batch,
                             .heads = cell.heads,
                             .kv_heads = kv_heads_of(cell),
                             .q_tokens = 1,
                             .kv_tokens = length_ + 1,
                             .head_dim = cell.head_dim,
                             .causal = false},
              backend.stream()),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        k_cache_(backend.allocator(), static_cast<std::size_t>(kv_heads_ * (length_ + 1) * dim_)),
        v_cache_(backend.allocator(), k_cache_.size()),
        q_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * dim_)),
        k_new_(backend.allocator(), static_cast<std::size_t>(kv_heads_ * dim_)),
        v_new_(backend.allocator(), k_new_.size()),
        out_(backend.allocator(), q_.size()),
        workspace_(backend.allocator(), workspace_floats(sdpa_)) {
    // Row L of the cache starts as NaN: only the step's append can make the output finite.
    poison(backend, k_cache_.data(), k_cache_.bytes());
    poison(backend, v_cache_.data(), v_cache_.bytes());
    const std::vector<float> k_context = kv_head_rows(inputs_, inputs_.k, group_, 0, length_);
    const std::vector<float> v_context = kv_head_rows(inputs_, inputs_.v, group_, 0, length_);
    for (std::int64_t kv = 0; kv < kv_heads_; ++kv) {
      const std::int64_t base = kv * (length_ + 1) * dim_;
      upload<bf16>(backend, k_context.data() + kv * length_ * dim_, length_ * dim_, k_cache_.data() + base);
      upload<bf16>(backend, v_context.data() + kv * length_ * dim_, length_ * dim_, v_cache_.data() + base);
    }
    upload_decode_token(backend, inputs_, group_, length_, q_, k_new_, v_new_);
    poison(backend, out_.data(), out_.bytes());
    if (workspace_.size() > 0) poison(backend, workspace_.data(), workspace_.bytes());
  }

  void run() override {
    // The append: one row of dim values per K/V head, into row L of its (L + 1)-row slab.
    const std::size_t row = static_cast<std::size_t>(dim_) * sizeof(bf16);
    const std::size_t slab = static_cast<std::size_t>(length_ + 1) * row;
    const std::size_t at = static_cast<std::size_t>(length_ * dim_);
    ARCH_BENCH_CUDA_CHECK(cudaMemcpy2DAsync(k_cache_.data() + at, slab, k_new_.data(), row, row,
                                            static_cast<std::size_t>(kv_heads_), cudaMemcpyDeviceToDevice,
                                            backend_.stream()));
    ARCH_BENCH_CUDA_CHECK(cudaMemcpy2DAsync(v_cache_.data() + at, slab, v_new_.data(), row, row,
                                            static_cast<std::size_t>(kv_heads_), cudaMemcpyDeviceToDevice,
                                            backend_.stream()));
    sdpa_.enqueue(q_.data(), k_cache_.data(), v_cache_.data(), out_.data(), workspace_.data());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<bf16>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_decode(inputs_, length_, out.data(), group_);
  }

  std::vector<ByteSpan> buffers() const override {
    return {k_cache_.byte_span(), v_cache_.byte_span(), q_.byte_span(), k_new_.byte_span(),
            v_new_.byte_span(),   out_.byte_span(),     workspace_.byte_span()};
  }

  std::string gpu_kernel() const override { return cudnn_sdpa_kernel_name(); }

 private:
  CudaBackend& backend_;
  std::int64_t length_, dim_, kv_heads_, group_;
  CudnnSdpa sdpa_;  // first: a shape cuDNN refuses costs no input drawing or device buffers
  AttentionInputs inputs_;
  Buffer<bf16> k_cache_, v_cache_, q_, k_new_, v_new_, out_;
  Buffer<float> workspace_;
};

class SoftmaxPrefillCudnnCell final : public PreparedCell, public NamesGpuKernel {
 public:
  SoftmaxPrefillCudnnCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend)
      : backend_(backend),
        group_(query_group_of(cell)),
        sdpa_(CudnnSdpaShape{.batch = cell.batch,
                             .heads = cell.heads,
                             .kv_heads = kv_heads_of(cell),
                             .q_tokens = cell.sequence_length,
                             .kv_tokens = cell.sequence_length,
                             .head_dim = cell.head_dim,
                             .causal = true},
              backend.stream()),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        q_(backend.allocator(), inputs_.q.size()),
        k_(backend.allocator(), inputs_.k.size() / static_cast<std::size_t>(group_)),
        v_(backend.allocator(), k_.size()),
        out_(backend.allocator(), inputs_.q.size()),
        workspace_(backend.allocator(), workspace_floats(sdpa_)) {
    upload<bf16>(backend, inputs_.q.data(), static_cast<std::int64_t>(inputs_.q.size()), q_.data());
    const std::int64_t kv_count = static_cast<std::int64_t>(k_.size());
    upload<bf16>(backend, kv_head_rows(inputs_, inputs_.k, group_, 0, inputs_.tokens).data(), kv_count, k_.data());
    upload<bf16>(backend, kv_head_rows(inputs_, inputs_.v, group_, 0, inputs_.tokens).data(), kv_count, v_.data());
    poison(backend, out_.data(), out_.bytes());
    if (workspace_.size() > 0) poison(backend, workspace_.data(), workspace_.bytes());
  }

  void run() override { sdpa_.enqueue(q_.data(), k_.data(), v_.data(), out_.data(), workspace_.data()); }

  Accuracy check() const override {
    const std::vector<float> out = download<bf16>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_prefill(inputs_, out.data(), group_);
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span(), workspace_.byte_span()};
  }

  std::string gpu_kernel() const override { return cudnn_sdpa_kernel_name(); }

 private:
  CudaBackend& backend_;
  std::int64_t group_;
  CudnnSdpa sdpa_;
  AttentionInputs inputs_;
  Buffer<bf16> q_, k_, v_, out_;
  Buffer<float> workspace_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_softmax_kv_cudnn(const Cell& cell, std::uint64_t seed, Backend& backend) {
  // cuDNN's fused attention has no fp32 storage (softmax_impl.cpp keeps fp32 on the hand kernels).
  if (cell.dtype != DType::bfloat16) {
    throw CudnnGraphUnsupported("cuDNN's fused attention takes bfloat16 storage only");
  }
  CudaBackend& cuda = cuda_backend_of(backend);
  if (cell.phase == Phase::decode) return std::make_unique<SoftmaxDecodeCudnnCell>(cell, seed, cuda);
  return std::make_unique<SoftmaxPrefillCudnnCell>(cell, seed, cuda);
}

}  // namespace arch_bench
