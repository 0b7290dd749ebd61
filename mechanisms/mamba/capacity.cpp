#include "mechanisms/mamba/capacity.hpp"

#include <memory>
#include <string>

#include "mechanisms/common/recall_probe.hpp"
#include "mechanisms/common/recall_reads.hpp"

namespace arch_bench {

// Neutral selection: dt = 1, no decay (exp(dt A) = 1, the A -> 0 limit), D = 0, no gate. Writing
// token i with B_i = k_i and u_i = v_i gives h[c] = sum_i k_i v_i[c]; reading with C = k_j gives
// y_j[c] = sum_i (k_j.k_i) v_i[c]: an unnormalised additive memory addressed by N-wide keys, exact for
// orthogonal keys up to n = N (the state size) and a growing blur beyond.
const CapacityProbe& mamba_capacity(std::int64_t state_size) {
  return probe_per_key(state_size, [](std::int64_t n) {
    return std::make_unique<RecallProbe>(
        additive_recall,
        "B = k (write), C = k (read), dt = 1, no decay (A -> 0), D = 0, no gate; keys of width N = " + std::to_string(n),
        n);
  });
}

}  // namespace arch_bench
