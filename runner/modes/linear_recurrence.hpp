#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runner/modes/mode.hpp"

namespace arch_bench {

// The project's default experiment (seed 003, 45_linear_recurrent_state): explicit K/V history
// (softmax_kv, baseline) against a fixed-size recurrent state (linear_attention, candidate).
std::unique_ptr<Mode> make_linear_recurrence_mode();

// The fixed-state decision shared by modes whose question is "does the candidate's state stay
// fixed while the baseline's grows, with correct outputs?" (linear_recurrence, mamba_scan).
// `accept_verdict` is returned when it does; details carry per-phase time ratios and crossovers.
Decision decide_fixed_state(std::span<const Row> rows, const Workload& workload, const Arm& baseline,
                            const Arm& candidate, const std::string& accept_verdict);

// A mode that asks decide_fixed_state's question of one candidate against softmax_kv, both at the
// workload's options (linear_recurrence, mamba_scan): its arms and verdict follow from the
// candidate's id and the verdict it earns when accepted.
class FixedStateMode : public DeclaredMode {
 public:
  FixedStateMode(ModeIdentity identity, std::string candidate, std::string accept_verdict)
      : DeclaredMode(std::move(identity)), candidate_(std::move(candidate)), accept_verdict_(std::move(accept_verdict)) {}
  std::vector<Arm> arms(const Workload& workload) const override;
  Decision decide(std::span<const Row> rows, const Workload& workload) const override;

 private:
  std::string candidate_;
  std::string accept_verdict_;
};

}  // namespace arch_bench
