// The CUDA prepared cells of softmax_kv: the CPU cells of mechanism.cpp with device buffers. Inputs
// are seeded and uploaded once at prepare time; run() only enqueues kernels on the backend's stream
// (timed with events, capturable into a CUDA graph); check() downloads the output and compares it
// with the same fp64 reference rows as the CPU cells.
#include <cuda_bf16.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/softmax_kv/check.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"

namespace arch_bench {

static_assert(sizeof(bf16) == sizeof(__nv_bfloat16) && alignof(bf16) == alignof(__nv_bfloat16),
              "cuda.cu reinterprets arch_bench::bf16 buffers as __nv_bfloat16");

namespace {

// Decode: the cache holds the context of L tokens; the step appends token L and attends over L + 1
// rows. Re-running the step rewrites the same slot, so every sample does identical work.
template <class T>
class SoftmaxDecodeCudaCell final : public PreparedCell {
 public:
  SoftmaxDecodeCudaCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend)
      : backend_(backend),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_softmax_decode_cuda(cell.batch_heads(), cell.head_dim, cell.dtype, length_ + 1, length_ + 1,
                                       backend.device().multiprocessors)),
        k_cache_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * (length_ + 1) * cell.head_dim)),
        v_cache_(backend.allocator(), k_cache_.size()),
        q_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim)),
        k_new_(backend.allocator(), q_.size()),
        v_new_(backend.allocator(), q_.size()),
        out_(backend.allocator(), q_.size()),
        workspace_(backend.allocator(), static_cast<std::size_t>(plan_.workspace_floats())) {
    const std::int64_t dim = cell.head_dim;
    // Row L of the cache starts as NaN: only the step's append can make the output finite.
    poison(backend, k_cache_.data(), k_cache_.bytes());
    poison(backend, v_cache_.data(), v_cache_.bytes());
    for (std::int64_t bh = 0; bh < cell.batch_heads(); ++bh) {
      const std::int64_t base = bh * (length_ + 1) * dim;
      upload<T>(backend, inputs_.k.data() + base, length_ * dim, k_cache_.data() + base);
      upload<T>(backend, inputs_.v.data() + base, length_ * dim, v_cache_.data() + base);
    }
    const std::int64_t count = static_cast<std::int64_t>(q_.size());
    upload<T>(backend, inputs_.head_rows(inputs_.q, length_, 1).data(), count, q_.data());
    upload<T>(backend, inputs_.head_rows(inputs_.k, length_, 1).data(), count, k_new_.data());
    upload<T>(backend, inputs_.head_rows(inputs_.v, length_, 1).data(), count, v_new_.data());
    poison(backend, out_.data(), out_.bytes());
    poison(backend, workspace_.data(), workspace_.bytes());
  }

  void run() override {
    launch_softmax_decode<T>(plan_, q_.data(), k_new_.data(), v_new_.data(), k_cache_.data(), v_cache_.data(),
                             length_, workspace_.data(), out_.data(), backend_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_decode(inputs_, length_, out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return {k_cache_.byte_span(), v_cache_.byte_span(), q_.byte_span(), k_new_.byte_span(),
            v_new_.byte_span(),   out_.byte_span(),     workspace_.byte_span()};
  }

 private:
  CudaBackend& backend_;
  std::int64_t length_;
  AttentionInputs inputs_;
  SoftmaxDecodeCudaPlan plan_;
  Buffer<T> k_cache_, v_cache_, q_, k_new_, v_new_, out_;
  Buffer<float> workspace_;
};

template <class T>
class SoftmaxPrefillCudaCell final : public PreparedCell {
 public:
  SoftmaxPrefillCudaCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend)
      : backend_(backend),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_softmax_prefill_cuda(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.dtype)),
        q_(backend.allocator(), inputs_.q.size()),
        k_(backend.allocator(), inputs_.k.size()),
        v_(backend.allocator(), inputs_.v.size()),
        out_(backend.allocator(), inputs_.q.size()) {
    upload<T>(backend, inputs_.q.data(), static_cast<std::int64_t>(inputs_.q.size()), q_.data());
    upload<T>(backend, inputs_.k.data(), static_cast<std::int64_t>(inputs_.k.size()), k_.data());
    upload<T>(backend, inputs_.v.data(), static_cast<std::int64_t>(inputs_.v.size()), v_.data());
    poison(backend, out_.data(), out_.bytes());
    configure_softmax_prefill<T>(plan_);  // the shared-memory opt-in, once, outside the timed unit
  }

  void run() override {
    launch_softmax_prefill<T>(plan_, q_.data(), k_.data(), v_.data(), out_.data(), backend_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_prefill(inputs_, out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  CudaBackend& backend_;
  AttentionInputs inputs_;
  SoftmaxPrefillCudaPlan plan_;
  Buffer<T> q_, k_, v_, out_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_softmax_kv_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  if (const auto reason = softmax_kv_cuda_unsupported(cell)) throw std::invalid_argument(*reason);
  return prepare_cell<SoftmaxDecodeCudaCell, SoftmaxPrefillCudaCell>(cell, seed, cuda_backend_of(backend));
}

}  // namespace arch_bench
