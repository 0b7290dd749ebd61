#include "runner/shard/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace arch_bench {

NominalRates nominal_rates(const std::string& backend) {
  // Orders of magnitude of a server CPU socket and of a data-centre GPU; only the ratio of bytes to
  // flops within one plan matters, since every cell of a plan runs on the same backend.
  if (backend == "cuda") return {2.0e12, 2.0e14};
  return {2.0e10, 2.0e11};
}

namespace {
double roofline_seconds(const Cost& cost, const NominalRates& rates) {
  return std::max(cost.bytes_moved / rates.bytes_per_second, cost.flops / rates.flops_per_second);
}
}  // namespace

std::int64_t predicted_cost_us(const PlannedCell& planned, const Workload& workload, const std::string& backend) {
  const NominalRates rates = nominal_rates(backend);
  double seconds = 0;
  if (planned.mechanism != nullptr) {
    const double samples = static_cast<double>(workload.warmup * workload.rounds + workload.repeats);
    const double steps = static_cast<double>(std::max<std::int64_t>(1, workload.timing.steps_per_sample));
    seconds += samples * steps * roofline_seconds(planned.mechanism->cost(planned.cell), rates);
    Cell prefill = planned.cell;
    prefill.phase = Phase::prefill;
    seconds += kReferenceSlowdown * roofline_seconds(planned.mechanism->cost(prefill), rates);
  }
  if (workload.cache_state == CacheState::cold) {
    seconds += static_cast<double>(workload.repeats) * static_cast<double>(planned.predicted_peak_bytes) /
               rates.bytes_per_second;
  }
  // Whole microseconds: the split compares integers, so the last bits of a floating-point sum (which
  // -march=native code may round differently on two nodes) cannot reorder near-equal cells.
  const double micros = std::round(seconds * 1e6);
  if (!(micros >= 1)) return 1;
  // Capped at 10^12 us (11.6 days), so that the sum over a plan of a million cells stays in 64 bits.
  return micros >= 1.0e12 ? std::int64_t{1'000'000'000'000} : static_cast<std::int64_t>(micros);
}

}  // namespace arch_bench
