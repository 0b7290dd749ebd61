#include "mechanisms/softmax_kv/mechanism.hpp"

#include <omp.h>

#include <type_traits>

#include "mechanisms/common/prepare_cell.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/check_rows.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/softmax_kv/capacity.hpp"
#include "mechanisms/softmax_kv/check.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "mechanisms/softmax_kv/softmax_impl.hpp"
#include "mechanisms/softmax_kv/conformance.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

// Decode: the cache holds the context of L tokens; the step appends token L and attends over
// L + 1 rows. Re-running the step rewrites the same slot, so every sample does identical work. With
// grouped-query attention the cache holds kv_heads heads, each read once for its group of queries.
template <class T>
class SoftmaxDecodeCell final : public PreparedCell {
 public:
  SoftmaxDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : length_(cell.sequence_length),
        group_(query_group_of(cell)),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_softmax_decode(cell.batch_heads(), cell.head_dim, length_ + 1, length_ + 1,
                                  omp_get_max_threads(), group_)),
        k_cache_(allocator, batch_kv_heads_of(cell) * (length_ + 1) * cell.head_dim),
        v_cache_(allocator, k_cache_.size()),
        q_(allocator, cell.batch_heads() * cell.head_dim),
        k_new_(allocator, batch_kv_heads_of(cell) * cell.head_dim),
        v_new_(allocator, k_new_.size()),
        out_(allocator, q_.size()),
        workspace_(allocator, plan_.workspace_floats()) {
    const std::int64_t dim = cell.head_dim;
    store_kv_heads(inputs_, inputs_.k, group_, length_, length_ + 1, k_cache_.data());
    store_kv_heads(inputs_, inputs_.v, group_, length_, length_ + 1, v_cache_.data());
    store_kv_token(inputs_, inputs_.k, group_, length_, k_new_.data());
    store_kv_token(inputs_, inputs_.v, group_, length_, v_new_.data());
    for (std::int64_t bh = 0; bh < cell.batch_heads(); ++bh) {
      store(inputs_.q_at(bh, length_), dim, q_.data() + bh * dim);
    }
  }

  void run() override {
    softmax_decode_step(plan_, q_.data(), k_new_.data(), v_new_.data(), k_cache_.data(),
                        v_cache_.data(), length_, workspace_.data(), out_.data());
  }

  Accuracy check() const override { return check_softmax_decode(inputs_, length_, out_.data(), group_); }

  std::string cpu_kernel_isa() const override {
    return dispatched_kernel_isa(softmax_decode_isa(plan_));
  }

  std::vector<ByteSpan> buffers() const override {
    return {k_cache_.byte_span(), v_cache_.byte_span(), q_.byte_span(), k_new_.byte_span(),
            v_new_.byte_span(),   out_.byte_span(),     workspace_.byte_span()};
  }

 private:
  std::int64_t length_;
  std::int64_t group_;
  AttentionInputs inputs_;
  SoftmaxDecodePlan plan_;
  Buffer<T> k_cache_, v_cache_, q_, k_new_, v_new_, out_;
  Buffer<float> workspace_;
};

template <class T>
class SoftmaxPrefillCell final : public PreparedCell {
 public:
  SoftmaxPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : group_(query_group_of(cell)),
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
    softmax_prefill(inputs_.batch_heads, inputs_.tokens, inputs_.dim, q_.data(), k_.data(),
                    v_.data(), out_.data(), cpu_isa(), AttentionPattern{.group = group_});
  }

  Accuracy check() const override { return check_softmax_prefill(inputs_, out_.data(), group_); }

  std::string cpu_kernel_isa() const override {
    return dispatched_kernel_isa(softmax_prefill_isa(std::is_same_v<T, bf16>, inputs_.dim));
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  std::int64_t group_;
  AttentionInputs inputs_;
  Buffer<T> q_, k_, v_, out_;
};

class SoftmaxKv final : public Mechanism {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{"softmax_kv",
                                    "softmax attention with an explicit K/V cache (grows with L)",
                                    StateKind::explicit_history,
#if ARCH_BENCH_HAVE_CUDA
                                    {"cpu", "cuda"}};
#else
                                    {"cpu"}};
#endif
    return info;
  }

  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (cell.head_dim > 256) return "softmax_kv takes head_dim up to 256";
    return kv_heads_problem(cell);
  }

  std::optional<std::string> unsupported_on(const Cell& cell, const std::string& backend) const override {
    // --softmax-impl cudnn where cuDNN's fused attention cannot run (softmax_impl.hpp).
    if (auto problem = softmax_impl_problem(cell, backend)) return problem;
    if (backend == "cuda") return softmax_kv_cuda_unsupported(cell);
    return std::nullopt;
  }

  std::vector<OptionSpec> option_specs() const override { return {kv_heads_option(), softmax_impl_option()}; }

  // The K/V cache: L rows of k and v for each of the batch's kv_heads K/V heads.
  std::int64_t state_bytes(const Cell& cell) const override {
    return checked_product(2, cell.sequence_length, batch_kv_heads_of(cell), cell.head_dim,
                           static_cast<std::int64_t>(dtype_bytes(cell.dtype)));
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    const std::int64_t bhd = checked_mul(cell.batch_heads(), cell.head_dim);
    const std::int64_t kv_hd = checked_mul(batch_kv_heads_of(cell), cell.head_dim);
    // q and out per query head, k and v per K/V head.
    if (cell.phase == Phase::prefill) {
      return checked_product(2, cell.sequence_length, checked_add(bhd, kv_hd), e);
    }
    // Split partials: the bound covers the CPU plan (splits <= 2 x threads) and the GPU plan (up to
    // 512 splits of >= 64 rows), whichever backend runs the cell.
    const std::int64_t workspace = softmax_decode_cuda_workspace_bytes_bound(cell);
    return checked_sum(checked_product(2, checked_add(cell.sequence_length, 1), kv_hd, e),
                       checked_product(2, checked_add(bhd, kv_hd), e), workspace);
  }

  std::int64_t predicted_process_bytes(const Cell& cell) const override {
    // The decode context goes straight from the drawn inputs into the cache: nothing is staged. The
    // check widens one head's q, k, v to fp64 at a time.
    return ProcessBytes{predicted_peak_bytes(cell), drawn_attention_bytes(cell, 3), 0, reference_head_bytes(cell, 4)}
        .total();
  }

  Cost cost(const Cell& cell) const override {
    const double e = static_cast<double>(dtype_bytes(cell.dtype));
    const double bh = static_cast<double>(cell.batch_heads());
    const double kv = static_cast<double>(batch_kv_heads_of(cell));
    const double d = static_cast<double>(cell.head_dim);
    const double length = static_cast<double>(cell.sequence_length);
    if (cell.phase == Phase::decode) {
      // Read each K/V head's cache once for its whole query group (context + new row), write the new
      // k/v row, read q and write the output per query head; the FLOPs are per query head.
      return {d * e * (kv * (2 * (length + 1) + 2) + 2 * bh), bh * (length + 1) * 4 * d};
    }
    // q, k, v read once and the output written once; QK^T and PV over the causal triangle.
    return {d * e * 2 * length * (bh + kv), bh * 2 * d * length * (length + 1)};
  }

  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed,
                                        Backend& backend) const override {
#if ARCH_BENCH_HAVE_CUDA
    if (backend.name() == "cuda") return prepare_softmax_kv_on_cuda(cell, seed, backend);  // hand or cuDNN
#endif
    return prepare_cell<SoftmaxDecodeCell, SoftmaxPrefillCell>(cell, seed, backend.allocator());
  }
  const ConformanceAdapter* conformance() const override { return &softmax_kv_conformance(); }
  const CapacityProbe* capacity_probe(const MechanismOptions&) const override { return &softmax_kv_capacity(); }
};

}  // namespace

std::unique_ptr<Mechanism> make_softmax_kv() { return std::make_unique<SoftmaxKv>(); }

ARCH_BENCH_REGISTER_MECHANISM(10, make_softmax_kv)

}  // namespace arch_bench
