#include "mechanisms/sliding_window/capacity.hpp"

#include <memory>

#include <fmt/format.h>

#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/common/recall_reads.hpp"

namespace arch_bench {

// softmax_kv's probe setting (mechanisms/softmax_kv/capacity.cpp): q = tau k_i, tau = 32 sqrt(d), so
// the self-match logit is 32. Pairs older than the window are gone: their keys are answered by the
// softmax over the window's keys alone.
const CapacityProbe& sliding_window_capacity(std::int64_t window) {
  return probe_per_key(window, [](std::int64_t w) {
    return std::make_unique<RecallProbe>(
        [w](const MatrixD& keys, const MatrixD& values) { return softmax_window_recall(keys, values, w); },
        fmt::format("exact softmax read of the last W = {} pairs with q = tau k, tau = 32 sqrt(head_dim)", w));
  });
}

}  // namespace arch_bench
