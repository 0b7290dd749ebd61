// Mode `landscape`: the whole field side by side. softmax_kv (the exact, growing K/V cache) is the
// baseline and every other registered mechanism a candidate (or those named by --candidates), in
// decode and prefill. Per candidate: the fixed-state verdict of linear_recurrence, its time ratios and
// crossover against the baseline, and its state capacity (recall of n stored (key, value) pairs);
// then one ranking at the longest length. A mechanism added to the registry joins with no change here.
// With --model (runner/models/), the arms are the model's own layer types at their shapes (its
// attention the baseline) and the candidates at the attention's shape; the report adds the `model`
// block and the decision the whole-model crossover and memory-limited batch per candidate.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "mechanisms/registry.hpp"
#include "core/errors.hpp"
#include "runner/measure/capacity.hpp"
#include "runner/models/model_figures.hpp"
#include "runner/models/model_workload.hpp"
#include "runner/modes/decision_rules.hpp"
#include "runner/modes/linear_recurrence.hpp"
#include "runner/modes/mode.hpp"
#include "runner/modes/standard_defaults.hpp"

namespace arch_bench {

namespace {

constexpr const char* kBaseline = "softmax_kv";

std::vector<std::string> candidate_ids(const Workload& workload) {
  if (!workload.candidates.empty()) return workload.candidates;
  std::vector<std::string> ids;
  for (const auto& mechanism : all_mechanisms()) {
    if (mechanism->info().id != kBaseline) ids.push_back(mechanism->info().id);
  }
  return ids;
}

bool of_arm(const Row& row, const Arm& arm) { return row.cell.mechanism == arm.mechanism && row.variant == arm.variant; }

// The rows of the baseline and of one candidate: each candidate's verdict sees only its own cells.
std::vector<Row> rows_of(std::span<const Row> rows, const Arm& baseline, const Arm& candidate) {
  std::vector<Row> subset;
  for (const Row& row : rows) {
    if (of_arm(row, baseline) || of_arm(row, candidate)) subset.push_back(row);
  }
  return subset;
}

const Row* row_at(std::span<const Row> rows, const Arm& arm, Phase phase, std::int64_t length) {
  for (const Row& row : rows) {
    if (of_arm(row, arm) && row.cell.phase == phase && row.cell.sequence_length == length) return &row;
  }
  return nullptr;
}

// Arms are told apart by variant in a model run, where one mechanism may appear as two layer types.
std::string arm_key(const Arm& arm) {
  return arm.variant.empty() ? arm.mechanism : fmt::format("{} ({})", arm.mechanism, arm.variant);
}

class LandscapeMode final : public DeclaredMode {
 public:
  LandscapeMode()
      : DeclaredMode(ModeIdentity{
            "landscape", "every mechanism against the exact K/V cache: state, step time, error, crossover and capacity",
            // Every mechanism x 2 phases x 3 lengths, with the baseline's L = 8192 prefill (an L^2
            // attention) among them: 2 + 10 calls keep the default run to minutes on a 2-core host.
            standard_mode_defaults("landscape", "ARCH-MECHANISM-LANDSCAPE", "arch-landscape-v1",
                                   {Phase::decode, Phase::prefill}, /*warmup=*/2, /*repeats=*/10)}) {}

  std::vector<Arm> arms(const Workload& workload) const override {
    if (workload.model) return model_arms(*workload.model, workload.candidates, workload.options);
    std::vector<Arm> arms{Arm{kBaseline, Role::baseline, "", workload.options}};
    for (const std::string& id : candidate_ids(workload)) {
      const Mechanism* mechanism = find_mechanism(id);
      if (mechanism == nullptr) {
        std::vector<std::string> known;
        for (const auto& m : all_mechanisms()) known.push_back(m->info().id);
        throw UsageError(fmt::format("--candidates: unknown mechanism '{}' (known: {})", id, fmt::join(known, ", ")));
      }
      if (id == kBaseline) throw UsageError("--candidates: softmax_kv is the landscape's baseline, not a candidate");
      arms.push_back(Arm{id, Role::candidate, "", mechanism->arm_options(workload.options)});
    }
    return arms;
  }

  Decision decide(std::span<const Row> rows, const Workload& workload) const override {
    const std::vector<Arm> all_arms = arms(workload);
    const Arm& baseline = all_arms.front();
    Decision decision;
    nlohmann::json per_candidate = nlohmann::json::object();
    int accepted = 0;
    std::size_t candidates = 0;
    for (std::size_t i = 1; i < all_arms.size(); ++i) {
      const Arm& candidate = all_arms[i];
      if (is_model_layer_arm(candidate)) continue;  // a layer type of the model itself: measured, not judged
      ++candidates;
      const std::vector<Row> subset = rows_of(rows, baseline, candidate);
      const Decision verdict = decide_fixed_state(subset, workload, baseline, candidate, "accept_fixed_state");
      accepted += verdict.verdict == "accept_fixed_state" ? 1 : 0;
      per_candidate[arm_key(candidate)] = {{"verdict", verdict.verdict},
                                            {"reasons", verdict.reasons},
                                            {"crossover_length", verdict.details.value("crossover_length", nlohmann::json())},
                                            {"time_ratio_candidate_over_baseline",
                                             verdict.details.value("time_ratio_candidate_over_baseline", nlohmann::json())}};
      if (const CapacityCurve* curve = capacity_of(candidate, workload)) {
        per_candidate[arm_key(candidate)]["capacity_largest_n_cosine_0_9"] =
            curve->largest_n_cosine_0_9 ? nlohmann::json(*curve->largest_n_cosine_0_9) : nlohmann::json(nullptr);
      }
      if (verdict.verdict != "accept_fixed_state") {
        decision.reasons.push_back(fmt::format("{}: {}{}", arm_key(candidate), verdict.verdict,
                                               verdict.reasons.empty() ? "" : " (" + verdict.reasons.front() + ")"));
      }
    }
    decision.details["candidates"] = per_candidate;
    decision.details["ranking"] = ranking(rows, workload, all_arms);
    if (workload.model) add_model_decision(decision, *workload.model, rows, workload, all_arms);
    if (const auto invalid = invalid_inputs_reason(rows, workload)) {
      decision.verdict = "inconclusive";
      decision.reasons.insert(decision.reasons.begin(), *invalid);
      decision.next_action = "bring the inputs into range (the default --qk-scale is 1) and re-run";
    } else if (static_cast<std::size_t>(accepted) == candidates) {
      decision.verdict = "landscape_complete";
      decision.reasons.insert(decision.reasons.begin(),
                              fmt::format("all {} candidates keep a fixed state with outputs within tolerance of "
                                          "their fp64 references; see details.ranking and capacity",
                                          candidates));
      decision.next_action = "pick by the ranking at your context length and the capacity curve; confirm task "
                             "quality separately (capacity is recall, not accuracy on a task)";
    } else {
      decision.verdict = "landscape_incomplete";
      decision.reasons.insert(decision.reasons.begin(),
                              fmt::format("{} of {} candidates were accepted; the others are listed below", accepted,
                                          candidates));
      decision.next_action = "see each candidate's verdict in details.candidates; re-run failed cells or fix the kernels";
    }
    return decision;
  }

  nlohmann::json report_extras(std::span<const Row> rows, const Workload& workload) const override {
    nlohmann::json capacity = nlohmann::json::object();
    const std::vector<Arm> all_arms = arms(workload);
    for (const Arm& arm : all_arms) {
      if (const CapacityCurve* curve = capacity_of(arm, workload)) capacity[arm.mechanism] = capacity_json(*curve);
      else capacity[arm.mechanism] = nullptr;
    }
    nlohmann::json extras = {{"capacity", {{"description", "n random unit-norm keys with N(0,1) values written into a fresh state "
                                          "(one head), every key read back; mean cosine and relative L2 of the "
                                          "retrieved values; fp64, the mechanism's math at its neutral setting"},
                          {"head_dim", workload.head_dim},
                          {"seed", workload.seed},
                          {"mechanisms", capacity}}}};
    if (workload.model) extras["model"] = model_block(*workload.model, rows, workload, all_arms);
    return extras;
  }

 private:
  // Capacity curves are math, not timings: computed once per (arm, head_dim, seed) and kept.
  const CapacityCurve* capacity_of(const Arm& arm, const Workload& workload) const {
    const Mechanism* mechanism = find_mechanism(arm.mechanism);
    const CapacityProbe* probe = mechanism ? mechanism->capacity_probe(arm.options) : nullptr;
    if (probe == nullptr) return nullptr;
    const std::string key = fmt::format("{}|{}|{}|{}", arm.mechanism, probe->setting(), workload.head_dim, workload.seed);
    auto found = curves_.find(key);
    if (found == curves_.end()) {
      found = curves_.emplace(key, measure_capacity(*probe, workload.head_dim, workload.seed,
                                                    capacity_sizes(workload.head_dim))).first;
    }
    return &found->second;
  }

  // At the longest length of each phase: every arm's median step, state bytes, ratio to the
  // baseline and capacity, fastest first (rows that are not ok are listed last, without a time).
  nlohmann::json ranking(std::span<const Row> rows, const Workload& workload, const std::vector<Arm>& all_arms) const {
    nlohmann::json out = nlohmann::json::object();
    if (workload.sequence_lengths.empty()) return out;
    const std::int64_t longest = *std::max_element(workload.sequence_lengths.begin(), workload.sequence_lengths.end());
    for (Phase phase : workload.phases) {
      const Row* base = row_at(rows, all_arms.front(), phase, longest);
      std::vector<nlohmann::json> entries;
      for (const Arm& arm : all_arms) {
        const Row* row = row_at(rows, arm, phase, longest);
        if (row == nullptr) continue;
        const bool timed = row->status == RowStatus::ok && !row->samples_ms.empty();
        const bool base_timed = base != nullptr && base->status == RowStatus::ok && base->stats.median > 0;
        const CapacityCurve* curve = capacity_of(arm, workload);
        entries.push_back({{"mechanism", arm.mechanism},
                           {"variant", arm.variant},
                           {"median_step_ms", timed ? nlohmann::json(row->stats.median) : nlohmann::json(nullptr)},
                           {"time_ratio_to_baseline", timed && base_timed ? nlohmann::json(row->stats.median / base->stats.median)
                                                                          : nlohmann::json(nullptr)},
                           {"state_bytes", row->state_bytes},
                           {"max_rel_error", std::isfinite(row->accuracy.max_rel_error) ? nlohmann::json(row->accuracy.max_rel_error)
                                                                                         : nlohmann::json(nullptr)},
                           {"capacity_largest_n_cosine_0_9",
                            curve && curve->largest_n_cosine_0_9 ? nlohmann::json(*curve->largest_n_cosine_0_9)
                                                                 : nlohmann::json(nullptr)}});
      }
      std::stable_sort(entries.begin(), entries.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
        if (a["median_step_ms"].is_null() != b["median_step_ms"].is_null()) return b["median_step_ms"].is_null();
        return !a["median_step_ms"].is_null() && a["median_step_ms"].get<double>() < b["median_step_ms"].get<double>();
      });
      out[phase_name(phase)] = {{"sequence_length", longest}, {"fastest_first", entries}};
    }
    return out;
  }

  mutable std::map<std::string, CapacityCurve> curves_;
};

}  // namespace

std::unique_ptr<Mode> make_landscape_mode() { return std::make_unique<LandscapeMode>(); }

}  // namespace arch_bench
