// The CPU prepared cells of softmax_kv and sliding_window. Decode at position L: the cache holds the
// context's last slots - 1 tokens, token p in row p % slots, slots = L + 1 (softmax_kv: the whole
// context, row p) or min(L + 1, W) (sliding_window's ring, which the step reads as it lies: softmax
// over a set of keys does not depend on their order). The step writes token L into row L % slots
// and attends over all rows; re-running it rewrites the same row, so every sample does identical
// work. With grouped-query attention the cache holds kv_heads heads, each read once for its group.
#include "mechanisms/softmax_kv/cpu_cells.hpp"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "core/bf16.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/softmax_kv/check.hpp"
#include "mechanisms/softmax_kv/decode_cache.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"

namespace arch_bench {

namespace {

template <class T>
class SoftmaxDecodeCell final : public PreparedCell {
 public:
  SoftmaxDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator, std::int64_t window)
      : length_(cell.sequence_length),
        group_(query_group_of(cell)),
        window_(window),
        slots_(decode_cache_rows(length_, window)),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_softmax_decode(cell.batch_heads(), cell.head_dim, slots_, slots_, omp_get_max_threads(), group_)),
        k_cache_(allocator, batch_kv_heads_of(cell) * slots_ * cell.head_dim),
        v_cache_(allocator, k_cache_.size()),
        q_(allocator, cell.batch_heads() * cell.head_dim),
        k_new_(allocator, batch_kv_heads_of(cell) * cell.head_dim),
        v_new_(allocator, k_new_.size()),
        out_(allocator, q_.size()),
        workspace_(allocator, plan_.workspace_floats()) {
    const std::int64_t dim = cell.head_dim;
    if (slots_ == length_ + 1) {
      // The whole context, row p = token p: one contiguous copy per K/V head.
      store_kv_heads(inputs_, inputs_.k, group_, length_, slots_, k_cache_.data());
      store_kv_heads(inputs_, inputs_.v, group_, length_, slots_, v_cache_.data());
    } else {
      for (std::int64_t kv = 0; kv < plan_.batch_kv_heads(); ++kv) {
        const std::int64_t source = kv * group_;
        for (std::int64_t p = length_ - (slots_ - 1); p < length_; ++p) {
          const std::int64_t row = (kv * slots_ + p % slots_) * dim;
          store(inputs_.k_at(source, p), dim, k_cache_.data() + row);
          store(inputs_.v_at(source, p), dim, v_cache_.data() + row);
        }
      }
    }
    store_kv_token(inputs_, inputs_.k, group_, length_, k_new_.data());
    store_kv_token(inputs_, inputs_.v, group_, length_, v_new_.data());
    for (std::int64_t bh = 0; bh < cell.batch_heads(); ++bh) {
      store(inputs_.q_at(bh, length_), dim, q_.data() + bh * dim);
    }
  }

  void run() override {
    softmax_decode_append(plan_, k_new_.data(), v_new_.data(), k_cache_.data(), v_cache_.data(), length_ % slots_);
    softmax_decode_attend(plan_, q_.data(), k_cache_.data(), v_cache_.data(), slots_, workspace_.data(), out_.data());
  }

  Accuracy check() const override { return check_softmax_decode(inputs_, length_, out_.data(), group_, window_); }

  std::string cpu_kernel_isa() const override { return dispatched_kernel_isa(softmax_decode_isa(plan_)); }

  std::vector<ByteSpan> buffers() const override {
    return {k_cache_.byte_span(), v_cache_.byte_span(), q_.byte_span(), k_new_.byte_span(),
            v_new_.byte_span(),   out_.byte_span(),     workspace_.byte_span()};
  }

 private:
  std::int64_t length_, group_, window_, slots_;
  AttentionInputs inputs_;
  SoftmaxDecodePlan plan_;
  Buffer<T> k_cache_, v_cache_, q_, k_new_, v_new_, out_;
  Buffer<float> workspace_;
};

template <class T>
class SoftmaxPrefillCell final : public PreparedCell {
 public:
  SoftmaxPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator, std::int64_t window)
      : group_(query_group_of(cell)),
        window_(window),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        q_(allocator, inputs_.q.size()),
        k_(allocator, inputs_.k.size() / group_),
        v_(allocator, k_.size()),
        out_(allocator, inputs_.q.size()) {
    store(inputs_.q.data(), inputs_.q.size(), q_.data());
    store_kv_heads(inputs_, inputs_.k, group_, inputs_.tokens, inputs_.tokens, k_.data());
    store_kv_heads(inputs_, inputs_.v, group_, inputs_.tokens, inputs_.tokens, v_.data());
  }

  void run() override {
    softmax_prefill(inputs_.batch_heads, inputs_.tokens, inputs_.dim, q_.data(), k_.data(), v_.data(), out_.data(),
                    cpu_isa(), AttentionPattern{.group = group_, .window = window_});
  }

  Accuracy check() const override { return check_softmax_prefill(inputs_, out_.data(), group_, window_); }

  std::string cpu_kernel_isa() const override {
    return dispatched_kernel_isa(softmax_prefill_isa(std::is_same_v<T, bf16>, inputs_.dim));
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  std::int64_t group_, window_;
  AttentionInputs inputs_;
  Buffer<T> q_, k_, v_, out_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_softmax_kv_cpu(const Cell& cell, std::uint64_t seed, Allocator& allocator,
                                                    std::int64_t window) {
  if (window < 0) throw std::invalid_argument("prepare_softmax_kv_cpu: window must be >= 0 (0: no window)");
  return prepare_cell<SoftmaxDecodeCell, SoftmaxPrefillCell>(cell, seed, allocator, window);
}

}  // namespace arch_bench
