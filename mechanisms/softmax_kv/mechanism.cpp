#include "mechanisms/softmax_kv/mechanism.hpp"

#include "core/checked_size.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/softmax_kv/capacity.hpp"
#include "mechanisms/softmax_kv/cpu_cells.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "mechanisms/softmax_kv/softmax_impl.hpp"
#include "mechanisms/softmax_kv/conformance.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

class SoftmaxKv final : public KernelMechanism {
 public:
  SoftmaxKv()
      : KernelMechanism({.id = "softmax_kv",
                         .title = "softmax attention with an explicit K/V cache (grows with L)",
                         .state_kind = StateKind::explicit_history,
                         .max_head_dim = 256,
                         .cuda_unsupported = softmax_kv_cuda_unsupported,
                         .conformance = softmax_kv_conformance,
                         .capacity = softmax_kv_capacity}) {}

  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (auto problem = KernelMechanism::unsupported(cell)) return problem;
    return kv_heads_problem(cell);
  }

  std::optional<std::string> unsupported_on(const Cell& cell, const std::string& backend) const override {
    // --softmax-impl cudnn where cuDNN's fused attention cannot run (softmax_impl.hpp).
    if (auto problem = softmax_impl_problem(cell, backend)) return problem;
    return KernelMechanism::unsupported_on(cell, backend);
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
    const auto [e, bh, kv, d, length] = attention_cost_terms(cell, batch_kv_heads_of(cell));
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
    return prepare_softmax_kv_cpu(cell, seed, backend.allocator());
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_softmax_kv() { return std::make_unique<SoftmaxKv>(); }

ARCH_BENCH_REGISTER_MECHANISM(10, make_softmax_kv)

}  // namespace arch_bench
