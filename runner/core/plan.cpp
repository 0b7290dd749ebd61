#include "runner/core/plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mechanisms/registry.hpp"
#include "runner/core/errors.hpp"

namespace arch_bench {

std::int64_t Plan::max_predicted_peak_bytes() const {
  std::int64_t peak = 0;
  for (const PlannedCell& planned : cells) peak = std::max(peak, planned.predicted_peak_bytes);
  return peak;
}

void validate_workload(const Workload& w) {
  if (w.sequence_lengths.empty()) throw UsageError("--sequence-lengths is empty; give e.g. 512,2048,8192");
  for (std::int64_t length : w.sequence_lengths) {
    if (length <= 0) throw UsageError(fmt::format("--sequence-lengths: {} is not a positive length", length));
  }
  if (w.batch <= 0) throw UsageError(fmt::format("--batch must be positive (got {})", w.batch));
  if (w.heads <= 0) throw UsageError(fmt::format("--query-heads must be positive (got {})", w.heads));
  if (w.head_dim <= 0) throw UsageError(fmt::format("--head-dim must be positive (got {})", w.head_dim));
  if (w.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0 (got {})", w.warmup));
  if (w.repeats <= 0) throw UsageError(fmt::format("--repeats must be >= 1 (got {}): a cell needs samples", w.repeats));
  if (w.threads <= 0) throw UsageError(fmt::format("--threads must be positive (got {})", w.threads));
  if (w.phases.empty()) throw UsageError("--phase is empty; use decode, prefill or both");
  for (std::int64_t m : w.features) {
    if (m <= 0) throw UsageError(fmt::format("--features: {} is not a positive feature count", m));
  }
}

Plan build_plan(const Mode& mode, const Workload& workload, const std::string& backend) {
  validate_workload(workload);
  Plan plan;
  const std::vector<Arm> arms = mode.arms(workload);
  for (Phase phase : workload.phases) {
    for (std::int64_t length : workload.sequence_lengths) {
      for (const Arm& arm : arms) {
        const Mechanism* mechanism = find_mechanism(arm.mechanism);
        if (mechanism == nullptr) {
          throw UsageError(fmt::format("mode {} names unknown mechanism '{}'", mode.id(), arm.mechanism));
        }
        const auto& backends = mechanism->info().backends;
        if (std::find(backends.begin(), backends.end(), backend) == backends.end()) {
          throw UsageError(fmt::format("mechanism {} has no {} implementation (it has: {})", arm.mechanism,
                                       backend, fmt::join(backends, ", ")));
        }
        Cell cell{arm.mechanism, phase, length, workload.batch, workload.heads, workload.head_dim,
                  workload.dtype, arm.options};
        if (auto why = mechanism->unsupported(cell)) {
          throw UsageError(fmt::format("{} cannot run this workload: {}", arm.mechanism, *why));
        }
        plan.cells.push_back({arm, cell, mechanism, mechanism->state_bytes(cell),
                              mechanism->predicted_peak_bytes(cell)});
      }
    }
  }
  return plan;
}

}  // namespace arch_bench
