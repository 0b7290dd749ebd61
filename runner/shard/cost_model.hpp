#pragma once
// The predicted cost of measuring one planned cell, which the shard split balances. It is a model,
// not a measurement: every shard process, on whatever node, must compute the same numbers so that
// the N processes agree on the split without talking to each other. So it uses fixed nominal rates
// per backend, never the node's measured ceilings, and is rounded to whole microseconds.
#include <cstdint>
#include <string>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

// Roofline time of one unit of work at nominal rates: max(bytes / bandwidth, flops / rate).
struct NominalRates {
  double bytes_per_second = 0;
  double flops_per_second = 0;
};
NominalRates nominal_rates(const std::string& backend);

// Predicted microseconds (>= 1) to measure `planned` under `workload`:
//   (warmup + repeats) x steps_per_sample x roofline(the cell's Cost per timed unit)
// + repeats x predicted_peak_bytes / bandwidth when cold (each sample evicts the cell's buffers first)
// + kReferenceSlowdown x roofline(prefill over the cell's L) for preparing the context and the fp64
//   reference check, which is what makes a long-L cell expensive even at few repeats.
std::int64_t predicted_cost_us(const PlannedCell& planned, const Workload& workload, const std::string& backend);

// The fp64 reference and the context set-up run as plain loops, several times slower than the timed
// kernel; the factor only weighs set-up against timing, so a round number is enough.
inline constexpr double kReferenceSlowdown = 4.0;

}  // namespace arch_bench
