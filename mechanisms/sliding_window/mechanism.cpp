// sliding_window: softmax_kv's kernels and prepared cells (cpu_cells.cpp, cuda_cells.cpp) with a
// window, on a bounded K/V state. Decode appends the new token to a ring of min(L + 1, W) rows per
// K/V head and runs softmax_kv's split decode over the ring as it lies; prefill is softmax_kv's
// blocked prefill with the band (t - W, t] masked, key blocks wholly outside the band skipped. With
// W >= L + 1 both are softmax_kv's computation, to the bit.
#include "mechanisms/sliding_window/mechanism.hpp"

#include <algorithm>

#include "core/checked_size.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/sliding_window/capacity.hpp"
#include "mechanisms/sliding_window/conformance.hpp"
#include "mechanisms/sliding_window/options.hpp"
#include "mechanisms/sliding_window/ring.hpp"
#include "mechanisms/softmax_kv/cpu_cells.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxDim = 256;         // softmax_kv's kernels
constexpr std::int64_t kMinRowsPerSplit = 256;  // plan_softmax_decode's: bounds the splits of the workspace

// Keys all queries of a causal banded prefill over L tokens see together: sum_t min(t + 1, W).
double banded_keys(double length, double window) {
  if (length <= window) return length * (length + 1) / 2;
  return window * (window + 1) / 2 + (length - window) * window;
}

class SlidingWindow final : public KernelMechanism {
 public:
  SlidingWindow()
      : KernelMechanism({.id = "sliding_window",
                         .title = "softmax attention over the last W tokens (--window; K/V state bounded at W)",
                         .max_head_dim = kMaxDim,
                         // softmax_kv's CUDA kernels, with their limits (16-byte rows, grid rows).
                         .cuda_unsupported = softmax_kv_cuda_unsupported,
                         .conformance = sliding_window_conformance}) {}

  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (auto problem = KernelMechanism::unsupported(cell)) return problem;
    if (window_option().integer(cell.options) < 1) return "--window must be at least 1 token";
    return kv_heads_problem(cell);
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
    const auto [e, bh, kv, d, length] = attention_cost_terms(cell, batch_kv_heads_of(cell));
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
    return prepare_softmax_kv_cpu(cell, seed, backend.allocator(), window_option().integer(cell.options));
  }

  const CapacityProbe* capacity_probe(const MechanismOptions& options) const override {
    return &sliding_window_capacity(window_option().integer(options));
  }
};

}  // namespace

std::unique_ptr<Mechanism> make_sliding_window() { return std::make_unique<SlidingWindow>(); }

// Right after softmax_kv (10): the bounded-memory form of the same attention.
ARCH_BENCH_REGISTER_MECHANISM(15, make_sliding_window)

}  // namespace arch_bench
