#include "runner/modes/linear_recurrence.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "runner/modes/decision_rules.hpp"
#include "runner/modes/standard_defaults.hpp"

namespace arch_bench {

std::unique_ptr<Mode> make_linear_recurrence_mode() {
  return std::make_unique<FixedStateMode>(
      ModeIdentity{"linear_recurrence", "explicit K/V history (softmax_kv) vs fixed recurrent state (linear_attention)",
                   standard_mode_defaults("45_linear_recurrent_state", "ARCH-RECURRENT-STATE-MECHANISM",
                                          "arch-linear-recurrence-v2", {Phase::decode}, /*warmup=*/10, /*repeats=*/100)},
      "linear_attention", "accept_fixed_state_growth_mechanism");
}

std::vector<Arm> FixedStateMode::arms(const Workload& workload) const {
  return {Arm{"softmax_kv", Role::baseline, "", workload.options},
          Arm{candidate_, Role::candidate, "", workload.options}};
}

Decision FixedStateMode::decide(std::span<const Row> rows, const Workload& workload) const {
  const std::vector<Arm> both = arms(workload);
  return decide_fixed_state(rows, workload, both[0], both[1], accept_verdict_);
}

Decision decide_fixed_state(std::span<const Row> rows, const Workload& workload, const Arm& baseline,
                            const Arm& candidate, const std::string& accept_verdict) {
  Decision decision;
  bool growth_shown = true;
  bool candidate_fixed = true;
  bool candidate_bounded = false;  // fixed only from a bound on (a sliding window): said in the reasons
  for (Phase phase : workload.phases) {
    const auto base = arm_rows(rows, baseline.mechanism, baseline.variant, phase);
    const auto cand = arm_rows(rows, candidate.mechanism, candidate.variant, phase);
    const std::string phase_id = phase_name(phase);
    if (!state_is_fixed(cand) && state_is_bounded(cand)) {
      candidate_bounded = true;
      decision.reasons.push_back(fmt::format(
          "{} state bytes grow with sequence length in {} up to a bound ({} bytes at L = {}, the same at "
          "twice that length): fixed from its bound on",
          candidate.mechanism, phase_id, cand.back()->state_bytes, cand.back()->cell.sequence_length));
    } else if (!state_is_fixed(cand)) {
      candidate_fixed = false;
      decision.reasons.push_back(fmt::format("{} state bytes change with sequence length in {}",
                                             candidate.mechanism, phase_id));
    }
    if (!state_grows_with_length(base)) {
      growth_shown = false;
      decision.reasons.push_back(fmt::format(
          "{} state bytes do not grow in proportion to L in {} (needs at least two distinct lengths)",
          baseline.mechanism, phase_id));
    }
    const auto ratios = time_ratio_by_length(base, cand);
    const auto crossover = crossover_length(ratios);
    nlohmann::json ratio_json = nlohmann::json::object();
    for (const auto& [length, ratio] : ratios) ratio_json[std::to_string(length)] = ratio;
    decision.details["time_ratio_candidate_over_baseline"][phase_id] = ratio_json;
    decision.details["crossover_length"][phase_id] =
        crossover ? nlohmann::json(*crossover) : nlohmann::json(nullptr);
    if (phase == workload.phases.front()) decision.crossover_length = crossover;
  }
  const std::vector<std::string> unhealthy = unhealthy_row_reasons(rows);
  decision.reasons.insert(decision.reasons.end(), unhealthy.begin(), unhealthy.end());

  if (decide_unusable_run(
          decision, rows, workload, rows, !unhealthy.empty(),
          [&](const Row& row) { return row.cell.mechanism == candidate.mechanism; },
          "bring the inputs into range (the default --qk-scale is 1) and re-run",
          "fix the candidate kernel: its outputs disagree with the fp64 reference")) {
    return decision;
  }
  if (!candidate_fixed) {
    decision.verdict = "reject_state_grows_with_length";
    decision.next_action = "the candidate does not keep a fixed state; it is not a recurrent-state mechanism";
  } else if (!growth_shown) {
    decision.verdict = "inconclusive";
    decision.next_action = "measure at least two distinct sequence lengths so that history growth can be shown";
  } else {
    decision.verdict = accept_verdict;
    decision.reasons.insert(decision.reasons.begin(),
                            fmt::format("{} state is {} while the {} history grows in proportion to L; "
                                        "all outputs are finite and within the dtype tolerance",
                                        candidate.mechanism, candidate_bounded ? "bounded" : "fixed",
                                        baseline.mechanism));
    decision.next_action = decision.crossover_length
                               ? "keep the fixed-state path for lengths from the crossover on; validate task "
                                 "quality and a dedicated kernel separately"
                               : "the state is fixed but the step is not cheaper at any measured length: "
                                 "measure longer contexts or optimise the recurrent kernel";
  }
  return decision;
}

}  // namespace arch_bench
