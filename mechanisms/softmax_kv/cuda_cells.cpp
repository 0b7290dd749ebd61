// The CUDA prepared cells of softmax_kv and sliding_window: the CPU cells of their mechanism.cpp
// with device buffers. Inputs are seeded and uploaded once at prepare time; run() only enqueues
// kernels on the backend's stream (timed with events, capturable into a CUDA graph); check()
// downloads the output and compares it with the same fp64 reference rows as the CPU cells. A window
// W > 0 makes them sliding_window's: the decode cache is its ring, the prefill banded.
#include <cuda_bf16.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/softmax_kv/check.hpp"
#include "mechanisms/softmax_kv/cuda_decode_token.hpp"
#include "mechanisms/softmax_kv/decode_cache.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"

namespace arch_bench {

static_assert(sizeof(bf16) == sizeof(__nv_bfloat16) && alignof(bf16) == alignof(__nv_bfloat16),
              "cuda.cu reinterprets arch_bench::bf16 buffers as __nv_bfloat16");

namespace {

// Decode: the cache holds the context of L tokens (or the ring its last slots - 1); the step
// appends token L at row L % slots (L without a window) and attends over all rows. Re-running the
// step rewrites the same row, so every sample does identical work.
template <class T>
class SoftmaxDecodeCudaCell final : public PreparedCell {
 public:
  SoftmaxDecodeCudaCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend, std::int64_t window)
      : backend_(backend),
        length_(cell.sequence_length),
        group_(query_group_of(cell)),
        window_(window),
        slots_(decode_cache_rows(length_, window)),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_softmax_decode_cuda(cell.batch_heads(), group_, cell.head_dim, cell.dtype, slots_, slots_,
                                       backend.device().multiprocessors)),
        k_cache_(backend.allocator(), static_cast<std::size_t>(batch_kv_heads_of(cell) * slots_ * cell.head_dim)),
        v_cache_(backend.allocator(), k_cache_.size()),
        q_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim)),
        k_new_(backend.allocator(), static_cast<std::size_t>(batch_kv_heads_of(cell) * cell.head_dim)),
        v_new_(backend.allocator(), k_new_.size()),
        out_(backend.allocator(), q_.size()),
        workspace_(backend.allocator(), static_cast<std::size_t>(plan_.workspace_floats())) {
    // K/V head j holds the rows drawn for query head j * group (grouped_kv.hpp): the context's last
    // slots - 1 tokens, token p at row p % slots. The new token's row is NaN: only the step's append
    // can make the output finite.
    upload_ring(inputs_.k, k_cache_);
    upload_ring(inputs_.v, v_cache_);
    upload_decode_token(backend, inputs_, group_, length_, q_, k_new_, v_new_);
    poison(backend, out_.data(), out_.bytes());
    poison(backend, workspace_.data(), workspace_.bytes());
  }

  void run() override {
    launch_softmax_decode<T>(plan_, q_.data(), k_new_.data(), v_new_.data(), k_cache_.data(), v_cache_.data(),
                             length_ % slots_, workspace_.data(), out_.data(), backend_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_decode(inputs_, length_, out.data(), group_, window_);
  }

  std::vector<ByteSpan> buffers() const override {
    return {k_cache_.byte_span(), v_cache_.byte_span(), q_.byte_span(), k_new_.byte_span(),
            v_new_.byte_span(),   out_.byte_span(),     workspace_.byte_span()};
  }

 private:
  void upload_ring(const std::vector<float>& tensor, Buffer<T>& cache) {
    const std::int64_t dim = inputs_.dim, first = length_ - (slots_ - 1);
    std::vector<float> ring(cache.size(), std::numeric_limits<float>::quiet_NaN());
    for (std::int64_t kv = 0; kv < inputs_.batch_heads / group_; ++kv) {
      for (std::int64_t p = first; p < length_; ++p) {
        const float* row = tensor.data() + (kv_source_head(kv * group_, group_) * inputs_.tokens + p) * dim;
        std::copy(row, row + dim, ring.data() + (kv * slots_ + p % slots_) * dim);
      }
    }
    upload<T>(backend_, ring.data(), static_cast<std::int64_t>(ring.size()), cache.data());
  }

  CudaBackend& backend_;
  std::int64_t length_, group_, window_, slots_;
  AttentionInputs inputs_;
  SoftmaxDecodeCudaPlan plan_;
  Buffer<T> k_cache_, v_cache_, q_, k_new_, v_new_, out_;
  Buffer<float> workspace_;
};

template <class T>
class SoftmaxPrefillCudaCell final : public PreparedCell {
 public:
  SoftmaxPrefillCudaCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend, std::int64_t window)
      : backend_(backend),
        group_(query_group_of(cell)),
        window_(window),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_softmax_prefill_cuda(cell.batch_heads(), group_, cell.sequence_length, cell.head_dim, cell.dtype,
                                        window)),
        q_(backend.allocator(), inputs_.q.size()),
        k_(backend.allocator(), inputs_.k.size() / static_cast<std::size_t>(group_)),
        v_(backend.allocator(), k_.size()),
        out_(backend.allocator(), inputs_.q.size()) {
    upload<T>(backend, inputs_.q.data(), static_cast<std::int64_t>(inputs_.q.size()), q_.data());
    const std::int64_t kv_count = static_cast<std::int64_t>(k_.size());
    upload<T>(backend, kv_head_rows(inputs_, inputs_.k, group_, 0, inputs_.tokens).data(), kv_count, k_.data());
    upload<T>(backend, kv_head_rows(inputs_, inputs_.v, group_, 0, inputs_.tokens).data(), kv_count, v_.data());
    poison(backend, out_.data(), out_.bytes());
    configure_softmax_prefill<T>(plan_);  // the shared-memory opt-in, once, outside the timed unit
  }

  void run() override {
    launch_softmax_prefill<T>(plan_, q_.data(), k_.data(), v_.data(), out_.data(), backend_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_prefill(inputs_, out.data(), group_, window_);
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  CudaBackend& backend_;
  std::int64_t group_, window_;
  AttentionInputs inputs_;
  SoftmaxPrefillCudaPlan plan_;
  Buffer<T> q_, k_, v_, out_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_softmax_kv_cuda(const Cell& cell, std::uint64_t seed, Backend& backend,
                                                     std::int64_t window) {
  if (const auto reason = softmax_kv_cuda_unsupported(cell)) throw std::invalid_argument(*reason);
  if (window < 0) throw std::invalid_argument("prepare_softmax_kv_cuda: window must be >= 0 (0: no window)");
  return prepare_cell<SoftmaxDecodeCudaCell, SoftmaxPrefillCudaCell>(cell, seed, cuda_backend_of(backend), window);
}

}  // namespace arch_bench
