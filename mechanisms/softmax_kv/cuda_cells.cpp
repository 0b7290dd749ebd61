// The CUDA prepared cells of softmax_kv: the CPU cells of mechanism.cpp with device buffers. Inputs
// are seeded and uploaded once at prepare time; run() only enqueues kernels on the backend's stream
// (timed with events, capturable into a CUDA graph); check() downloads the output and compares it
// with the same fp64 reference rows as the CPU cells.
#include <cuda_bf16.h>

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
#include "mechanisms/softmax_kv/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"

namespace arch_bench {

static_assert(sizeof(bf16) == sizeof(__nv_bfloat16) && alignof(bf16) == alignof(__nv_bfloat16),
              "cuda.cu reinterprets arch_bench::bf16 buffers as __nv_bfloat16");

namespace {

// A plan for query heads that share K/V heads in groups of `group` (kv_heads_option.hpp).
template <class Plan>
Plan grouped(Plan plan, std::int64_t group) {
  plan.group = group;
  return plan;
}

// Decode: the cache holds the context of L tokens; the step appends token L and attends over L + 1
// rows. Re-running the step rewrites the same slot, so every sample does identical work.
template <class T>
class SoftmaxDecodeCudaCell final : public PreparedCell {
 public:
  SoftmaxDecodeCudaCell(const Cell& cell, std::uint64_t seed, CudaBackend& backend)
      : backend_(backend),
        length_(cell.sequence_length),
        group_(query_group_of(cell)),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(grouped(plan_softmax_decode_cuda(cell.batch_heads(), cell.head_dim, cell.dtype, length_ + 1, length_ + 1,
                                               backend.device().multiprocessors),
                      group_)),
        k_cache_(backend.allocator(), static_cast<std::size_t>(batch_kv_heads_of(cell) * (length_ + 1) * cell.head_dim)),
        v_cache_(backend.allocator(), k_cache_.size()),
        q_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim)),
        k_new_(backend.allocator(), static_cast<std::size_t>(batch_kv_heads_of(cell) * cell.head_dim)),
        v_new_(backend.allocator(), k_new_.size()),
        out_(backend.allocator(), q_.size()),
        workspace_(backend.allocator(), static_cast<std::size_t>(plan_.workspace_floats())) {
    const std::int64_t dim = cell.head_dim;
    // Row L of the cache starts as NaN: only the step's append can make the output finite.
    poison(backend, k_cache_.data(), k_cache_.bytes());
    poison(backend, v_cache_.data(), v_cache_.bytes());
    // K/V head j holds the rows drawn for query head j * group (grouped_kv.hpp).
    const std::vector<float> k_context = kv_head_rows(inputs_, inputs_.k, group_, 0, length_);
    const std::vector<float> v_context = kv_head_rows(inputs_, inputs_.v, group_, 0, length_);
    for (std::int64_t kv = 0; kv < batch_kv_heads_of(cell); ++kv) {
      const std::int64_t base = kv * (length_ + 1) * dim;
      upload<T>(backend, k_context.data() + kv * length_ * dim, length_ * dim, k_cache_.data() + base);
      upload<T>(backend, v_context.data() + kv * length_ * dim, length_ * dim, v_cache_.data() + base);
    }
    const std::int64_t kv_count = static_cast<std::int64_t>(k_new_.size());
    upload<T>(backend, inputs_.head_rows(inputs_.q, length_, 1).data(), static_cast<std::int64_t>(q_.size()),
              q_.data());
    upload<T>(backend, kv_head_rows(inputs_, inputs_.k, group_, length_, 1).data(), kv_count, k_new_.data());
    upload<T>(backend, kv_head_rows(inputs_, inputs_.v, group_, length_, 1).data(), kv_count, v_new_.data());
    poison(backend, out_.data(), out_.bytes());
    poison(backend, workspace_.data(), workspace_.bytes());
  }

  void run() override {
    launch_softmax_decode<T>(plan_, q_.data(), k_new_.data(), v_new_.data(), k_cache_.data(), v_cache_.data(),
                             length_, workspace_.data(), out_.data(), backend_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(backend_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_softmax_decode(inputs_, length_, out.data(), group_);
  }

  std::vector<ByteSpan> buffers() const override {
    return {k_cache_.byte_span(), v_cache_.byte_span(), q_.byte_span(), k_new_.byte_span(),
            v_new_.byte_span(),   out_.byte_span(),     workspace_.byte_span()};
  }

 private:
  CudaBackend& backend_;
  std::int64_t length_;
  std::int64_t group_;
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
        group_(query_group_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(grouped(plan_softmax_prefill_cuda(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.dtype),
                      group_)),
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
    return check_softmax_prefill(inputs_, out.data(), group_);
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  CudaBackend& backend_;
  std::int64_t group_;
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
