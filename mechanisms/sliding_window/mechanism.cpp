// sliding_window: softmax_kv's kernels on a bounded K/V state. Decode appends the new token to a ring
// of min(L + 1, W) rows per K/V head and runs softmax_kv's split decode over the ring as it lies;
// prefill is softmax_kv's blocked prefill with the band (t - W, t] masked, key blocks wholly outside
// the band skipped. With W >= L + 1 both are softmax_kv's computation, to the bit.
#include "mechanisms/sliding_window/mechanism.hpp"

#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/sliding_window/capacity.hpp"
#include "mechanisms/sliding_window/conformance.hpp"
#include "mechanisms/sliding_window/options.hpp"
#include "mechanisms/sliding_window/ring.hpp"
#include "mechanisms/softmax_kv/check.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;         // softmax_kv's kernels
constexpr std::int64_t kMinRowsPerSplit = 256;  // plan_softmax_decode's: bounds the splits of the workspace

// Decode at position L: the ring holds the context's last min(L, W) tokens; the step writes token L
// into slot L % slots (the oldest token's) and attends over all slots. Re-running rewrites the same
// slot, so every sample does identical work.
template <class T>
class SlidingWindowDecodeCell final : public PreparedCell {
 public:
  SlidingWindowDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : length_(cell.sequence_length),
        window_(window_option().integer(cell.options)),
        group_(query_group_of(cell)),
        slots_(ring_slots(length_, window_)),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_softmax_decode(cell.batch_heads(), cell.head_dim, slots_, slots_, omp_get_max_threads(), group_)),
        k_ring_(allocator, batch_kv_heads_of(cell) * slots_ * cell.head_dim),
        v_ring_(allocator, k_ring_.size()),
        q_(allocator, cell.batch_heads() * cell.head_dim),
        k_new_(allocator, batch_kv_heads_of(cell) * cell.head_dim),
        v_new_(allocator, k_new_.size()),
        out_(allocator, q_.size()),
        workspace_(allocator, plan_.workspace_floats()) {
    const std::int64_t dim = cell.head_dim;
    for (std::int64_t kv = 0; kv < plan_.batch_kv_heads(); ++kv) {
      const std::int64_t source = kv * group_;
      for (std::int64_t p = std::max<std::int64_t>(0, length_ - slots_); p < length_; ++p) {
        const std::int64_t row = (kv * slots_ + p % slots_) * dim;
        store(inputs_.k_at(source, p), dim, k_ring_.data() + row);
        store(inputs_.v_at(source, p), dim, v_ring_.data() + row);
      }
    }
    store_kv_token(inputs_, inputs_.k, group_, length_, k_new_.data());
    store_kv_token(inputs_, inputs_.v, group_, length_, v_new_.data());
    for (std::int64_t bh = 0; bh < cell.batch_heads(); ++bh) {
      store(inputs_.q_at(bh, length_), dim, q_.data() + bh * dim);
    }
  }

  void run() override {
    softmax_decode_append(plan_, k_new_.data(), v_new_.data(), k_ring_.data(), v_ring_.data(), length_ % slots_);
    softmax_decode_attend(plan_, q_.data(), k_ring_.data(), v_ring_.data(), slots_, workspace_.data(), out_.data());
  }

  Accuracy check() const override {
    return check_softmax_decode(inputs_, length_, out_.data(), group_, window_);
  }

  std::string cpu_kernel_isa() const override { return dispatched_kernel_isa(softmax_decode_isa(plan_)); }

  std::vector<ByteSpan> buffers() const override {
    return {k_ring_.byte_span(), v_ring_.byte_span(), q_.byte_span(),  k_new_.byte_span(),
            v_new_.byte_span(),  out_.byte_span(),    workspace_.byte_span()};
  }

 private:
  std::int64_t length_, window_, group_, slots_;
  AttentionInputs inputs_;
  SoftmaxDecodePlan plan_;
  Buffer<T> k_ring_, v_ring_, q_, k_new_, v_new_, out_;
  Buffer<float> workspace_;
};

template <class T>
class SlidingWindowPrefillCell final : public PreparedCell {
 public:
  SlidingWindowPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : window_(window_option().integer(cell.options)),
        group_(query_group_of(cell)),
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
  std::int64_t window_, group_;
  AttentionInputs inputs_;
  Buffer<T> q_, k_, v_, out_;
};

// Keys all queries of a causal banded prefill over L tokens see together: sum_t min(t + 1, W).
double banded_keys(double length, double window) {
  if (length <= window) return length * (length + 1) / 2;
  return window * (window + 1) / 2 + (length - window) * window;
}

class SlidingWindow final : public Mechanism {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{"sliding_window",
                                    "softmax attention over the last W tokens (--window; K/V state bounded at W)",
                                    StateKind::fixed_state,
#if ARCH_BENCH_HAVE_CUDA
                                    {"cpu", "cuda"}};
#else
                                    {"cpu"}};
#endif
    return info;
  }

  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (cell.head_dim > kMaxDim) return "sliding_window takes head_dim up to 256";
    if (window_option().integer(cell.options) < 1) return "--window must be at least 1 token";
    return kv_heads_problem(cell);
  }

  // softmax_kv's CUDA kernels, with their limits (16-byte rows, grid rows).
  std::optional<std::string> unsupported_on(const Cell& cell, const std::string& backend) const override {
    if (backend == "cuda") return softmax_kv_cuda_unsupported(cell);
    return std::nullopt;
  }

  std::vector<OptionSpec> option_specs() const override { return {window_option(), kv_heads_option()}; }

  // The ring: min(L, W) tokens of k and v per K/V head, bounded by W whatever L.
  std::int64_t state_bytes(const Cell& cell) const override {
    return checked_product(2, ring_context_tokens(cell.sequence_length, window_option().integer(cell.options)),
                           batch_kv_heads_of(cell), cell.head_dim, static_cast<std::int64_t>(dtype_bytes(cell.dtype)));
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    const std::int64_t bhd = checked_mul(cell.batch_heads(), cell.head_dim);
    const std::int64_t kv_hd = checked_mul(batch_kv_heads_of(cell), cell.head_dim);
    if (cell.phase == Phase::prefill) return checked_product(2, cell.sequence_length, checked_add(bhd, kv_hd), e);
    const std::int64_t slots = ring_slots(cell.sequence_length, window_option().integer(cell.options));
    // plan_softmax_decode's splits are at most max(1, slots / 256); one partial per query head and split.
    // The CUDA plan's bound is softmax_kv's for a cache of `slots` rows; whichever backend runs it.
    const std::int64_t splits = std::max<std::int64_t>(1, slots / kMinRowsPerSplit);
    Cell ring = cell;
    ring.sequence_length = slots - 1;
    const std::int64_t workspace =
        std::max(checked_product(cell.batch_heads(), splits, checked_add(cell.head_dim, 2),
                                 static_cast<std::int64_t>(sizeof(float))),
                 softmax_decode_cuda_workspace_bytes_bound(ring));
    return checked_sum(checked_product(2, slots, kv_hd, e), checked_product(2, checked_add(bhd, kv_hd), e), workspace);
  }

  Cost cost(const Cell& cell) const override {
    const double e = static_cast<double>(dtype_bytes(cell.dtype));
    const double bh = static_cast<double>(cell.batch_heads());
    const double kv = static_cast<double>(batch_kv_heads_of(cell));
    const double d = static_cast<double>(cell.head_dim);
    const double length = static_cast<double>(cell.sequence_length);
    const double window = static_cast<double>(window_option().integer(cell.options));
    if (cell.phase == Phase::decode) {
      // softmax_kv's step over the ring's min(L + 1, W) rows.
      const double rows = std::min(length + 1, window);
      return {d * e * (kv * (2 * rows + 2) + 2 * bh), bh * rows * 4 * d};
    }
    // q, k, v read once and the output written once; QK^T and PV over the band.
    return {d * e * 2 * length * (bh + kv), bh * 4 * d * banded_keys(length, window)};
  }

  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed, Backend& backend) const override {
#if ARCH_BENCH_HAVE_CUDA
    if (backend.name() == "cuda") return prepare_softmax_kv_cuda(cell, seed, backend, window_option().integer(cell.options));
#endif
    return prepare_cell<SlidingWindowDecodeCell, SlidingWindowPrefillCell>(cell, seed, backend.allocator());
  }

  const ConformanceAdapter* conformance() const override { return &sliding_window_conformance(); }

  const CapacityProbe* capacity_probe(const MechanismOptions& options) const override {
    return &sliding_window_capacity(window_option().integer(options));
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_sliding_window() { return std::make_unique<SlidingWindow>(); }

// Right after softmax_kv (10): the bounded-memory form of the same attention.
ARCH_BENCH_REGISTER_MECHANISM(15, make_sliding_window)

}  // namespace arch_bench
