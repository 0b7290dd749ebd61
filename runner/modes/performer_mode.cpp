// Mode `performer`: exact softmax attention with its K/V cache (softmax_kv, baseline) against
// Performer's random-feature approximation (candidates: favor+ at each m of the workload's
// `features`, and trig at the largest m for comparison). The question is the one the seed's
// selection advice turns on: from which length is the approximation cheaper, and how far is it
// from exact attention at the m that buys that?
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "runner/modes/decision_rules.hpp"
#include "runner/modes/mode.hpp"
#include "runner/modes/standard_defaults.hpp"
#include "mechanisms/performer/options.hpp"

namespace arch_bench {

std::unique_ptr<Mode> make_performer_mode();

namespace {

// Accepted relative L2 error of the chosen (largest-m) favor+ outputs against exact softmax
// attention, over the checked rows of every cell. 10% is where an attention output still points
// where the exact one does (cosine similarity >= ~0.995); it is a screening bound for a
// mechanism swap, not a task-quality guarantee.
constexpr double kMaxRelL2VsSoftmax = 0.1;

constexpr std::int64_t kDefaultFeatures[] = {64, 128, 256};

// The m values of the workload's --features list (performer's axis option), or the default ones.
std::vector<std::int64_t> feature_counts(const Workload& workload) {
  std::vector<std::int64_t> counts;
  if (const auto axis = workload.axes.find(performer_features_option().key); axis != workload.axes.end()) {
    for (const OptionValue& m : axis->second) counts.push_back(std::get<std::int64_t>(m));
  }
  if (counts.empty()) counts.assign(std::begin(kDefaultFeatures), std::end(kDefaultFeatures));
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

Arm performer_arm(const Workload& workload, const std::string& map, std::int64_t m) {
  Arm arm{"performer", Role::candidate, "", workload.options};
  arm.options.set(performer_feature_map_option().key, map);
  arm.options.set(performer_features_option().key, m);
  // Trig features have no eps to place: their arm records (and uses) the causal stabiliser.
  if (map == "trig") arm.options.set(favor_stabilizer_option().key, std::string("causal"));
  arm.variant = map == "trig" ? fmt::format("trig m={}", m) : fmt::format("m={}", m);
  return arm;
}

// Largest approx_rel_l2_vs_softmax over rows; nullopt when a row has none (not measured).
std::optional<double> worst_error(const std::vector<const Row*>& rows) {
  if (rows.empty()) return std::nullopt;
  double worst = 0;
  for (const Row* row : rows) {
    if (row->status != RowStatus::ok || !row->accuracy.approx_rel_l2_vs_softmax) return std::nullopt;
    const double error = *row->accuracy.approx_rel_l2_vs_softmax;
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

nlohmann::json by_length(const std::vector<const Row*>& rows, auto value) {
  nlohmann::json out = nlohmann::json::object();
  for (const Row* row : rows) out[std::to_string(row->cell.sequence_length)] = value(*row);
  return out;
}

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

ModeDefaults performer_defaults() {
  // One warmup/repeats setting covers both phases, and the exact softmax prefill at L=8192 is
  // ~70 GFLOP (seconds on a 2-core CPU). 3 + 20 keeps the default matrix to a few minutes
  // there; give --repeats 100 on a GPU or a bigger host.
  ModeDefaults defaults =
      standard_mode_defaults("performer_favor", "ARCH-PERFORMER-FAVOR-APPROXIMATION", "arch-performer-favor-v1",
                             {Phase::decode, Phase::prefill}, /*warmup=*/3, /*repeats=*/20);
  for (std::int64_t m : kDefaultFeatures) defaults.workload.axes[performer_features_option().key].push_back(m);
  defaults.workload.feature_kind = "both";
  return defaults;
}

class PerformerMode final : public DeclaredMode {
 public:
  PerformerMode()
      : DeclaredMode(ModeIdentity{
            "performer",
            "exact softmax K/V attention vs Performer random features (favor+ over m, trig), error vs softmax",
            performer_defaults()}) {}

  // favor+ at every m (feature_kind "positive" or "both"), trig at the largest m ("both") or at
  // every m ("trig"). Each performer arm names its map in its feature_map option, so the report's
  // arm options say which features a row used.
  std::vector<Arm> arms(const Workload& workload) const override {
    std::vector<Arm> arms{Arm{"softmax_kv", Role::baseline, "", workload.options}};
    const std::vector<std::int64_t> counts = feature_counts(workload);
    const std::string& kind = workload.feature_kind;
    if (kind != "trig") {
      for (std::int64_t m : counts) arms.push_back(performer_arm(workload, "favor+", m));
    }
    if (kind == "trig") {
      for (std::int64_t m : counts) arms.push_back(performer_arm(workload, "trig", m));
    } else if (kind == "both") {
      arms.push_back(performer_arm(workload, "trig", counts.back()));
    }
    return arms;
  }

  // Accept when the chosen arm (favor+ at the largest m; trig's when only trig is measured) is
  // within kMaxRelL2VsSoftmax of exact attention at every length and phase AND, in every measured
  // phase, cheaper than the baseline from some length on (through the longest). The other arms inform:
  // their errors and crossovers are in details, so the report shows what m buys.
  Decision decide(std::span<const Row> rows, const Workload& workload) const override {
    const std::vector<Arm> all = arms(workload);
    const Arm& baseline = all.front();
    // The arm the verdict is about: favor+ at the largest m (trig only when no favor+ arm runs).
    const Arm* chosen = nullptr;
    auto is_favor = [](const Arm& arm) { return performer_feature_map_option().text(arm.options) != "trig"; };
    auto m_of = [](const Arm& arm) { return performer_features_option().integer(arm.options); };
    for (const Arm& arm : all) {
      if (arm.role != Role::candidate) continue;
      if (chosen == nullptr || (is_favor(arm) && !is_favor(*chosen)) ||
          (is_favor(arm) == is_favor(*chosen) && m_of(arm) > m_of(*chosen))) {
        chosen = &arm;
      }
    }

    Decision decision;
    decision.details["max_rel_l2_vs_softmax"] = kMaxRelL2VsSoftmax;
    decision.details["chosen_variant"] = chosen ? chosen->variant : "";
    // Top-level crossover: the length from which the chosen arm is cheaper in EVERY measured phase
    // (the largest per-phase crossover; none when some phase has none). Per phase in details.
    std::optional<std::int64_t> all_phases_crossover;
    bool every_phase_crosses = true;
    for (Phase phase : workload.phases) {
      const std::string phase_id = phase_name(phase);
      const auto base = arm_rows(rows, baseline.mechanism, baseline.variant, phase);
      for (const Arm& arm : all) {
        if (arm.role != Role::candidate) continue;
        const auto cand = arm_rows(rows, arm.mechanism, arm.variant, phase);
        const auto ratios = time_ratio_by_length(base, cand);
        const auto crossover = crossover_length(ratios);
        nlohmann::json ratio_json = nlohmann::json::object();
        for (const auto& [length, ratio] : ratios) ratio_json[std::to_string(length)] = ratio;
        nlohmann::json& entry = decision.details["variants"][arm.variant][phase_id];
        entry["time_ratio_candidate_over_baseline"] = ratio_json;
        entry["crossover_length"] = crossover ? nlohmann::json(*crossover) : nlohmann::json(nullptr);
        entry["approx_rel_l2_vs_softmax"] = by_length(cand, [](const Row& row) {
          return optional_json(row.accuracy.approx_rel_l2_vs_softmax);
        });
        entry["approx_max_abs_vs_softmax"] = by_length(cand, [](const Row& row) {
          return optional_json(row.accuracy.approx_max_abs_vs_softmax);
        });
        entry["nonpositive_denominators"] = by_length(cand, [](const Row& row) {
          return row.accuracy.nonpositive_denominators;
        });
        if (&arm == chosen) {
          decision.details["crossover_length"][phase_id] = entry["crossover_length"];
          if (!crossover) every_phase_crosses = false;
          else all_phases_crossover = std::max(all_phases_crossover.value_or(*crossover), *crossover);
        }
      }
    }
    if (every_phase_crosses) decision.crossover_length = all_phases_crossover;
    if (chosen == nullptr) {
      decision.verdict = "inconclusive";
      decision.reasons.push_back("the workload gives the mode no performer arm (check --features)");
      decision.next_action = "give at least one feature count with --features";
      return decision;
    }

    // Health: the baseline's and the chosen arm's rows decide; the other arms' problems are
    // listed (trig rows can be ill-conditioned by design: their denominators can reach 0).
    std::vector<Row> decisive, informative;
    for (const Row& row : rows) {
      const bool is_chosen = row.cell.mechanism == chosen->mechanism && row.variant == chosen->variant;
      (row.role == Role::baseline || is_chosen ? decisive : informative).push_back(row);
    }
    const std::vector<std::string> unhealthy = unhealthy_row_reasons(decisive);
    decision.reasons.insert(decision.reasons.end(), unhealthy.begin(), unhealthy.end());
    for (const std::string& reason : unhealthy_row_reasons(informative)) {
      decision.reasons.push_back("(not decisive) " + reason);
    }

    std::vector<const Row*> chosen_rows;
    for (Phase phase : workload.phases) {
      for (const Row* row : arm_rows(rows, chosen->mechanism, chosen->variant, phase)) chosen_rows.push_back(row);
    }
    const std::optional<double> error = worst_error(chosen_rows);
    decision.details["chosen_worst_rel_l2_vs_softmax"] = optional_json(error);

    if (decide_unusable_run(
            decision, rows, workload, decisive, !unhealthy.empty(),
            [](const Row& row) { return row.role == Role::candidate; },
            "bring the inputs into range (FAVOR+ works at --qk-scale 0.3 or below) and re-run",
            "fix the performer kernel: its outputs disagree with the fp64 Performer reference")) {
      return decision;
    }
    if (!error) {
      decision.verdict = "inconclusive";
      decision.reasons.push_back(fmt::format("{} rows carry no error against exact softmax", chosen->variant));
      decision.next_action = "re-run: every performer row must report approx_rel_l2_vs_softmax";
    } else if (*error > kMaxRelL2VsSoftmax) {
      decision.verdict = "reject_performer_approximation_error";
      decision.reasons.insert(decision.reasons.begin(),
                              fmt::format("performer [{}] is {:.3g} (relative L2) from exact softmax attention at "
                                          "worst, above the {:.3g} bound",
                                          chosen->variant, *error, kMaxRelL2VsSoftmax));
      decision.next_action = "raise m (details.variants shows the error falling with m) or keep exact attention";
    } else if (!decision.crossover_length) {
      decision.verdict = "reject_performer_not_cheaper";
      decision.reasons.insert(decision.reasons.begin(),
                              fmt::format("performer [{}] is within {:.3g} of exact softmax but not cheaper than "
                                          "softmax_kv through the longest measured length in every phase "
                                          "(details.crossover_length per phase)",
                                          chosen->variant, kMaxRelL2VsSoftmax));
      decision.next_action = "measure longer contexts, or optimise the feature projection (it dominates at small L)";
    } else {
      decision.verdict = "accept_performer_approximation";
      decision.reasons.insert(decision.reasons.begin(),
                              fmt::format("performer [{}] is within {:.3g} (relative L2 {:.3g}) of exact softmax "
                                          "attention and, in every phase, cheaper than softmax_kv from L={} on",
                                          chosen->variant, kMaxRelL2VsSoftmax, *error, *decision.crossover_length));
      decision.next_action = "use the approximation from the crossover length on; validate task quality separately";
    }
    return decision;
  }
};

}  // namespace

std::unique_ptr<Mode> make_performer_mode() { return std::make_unique<PerformerMode>(); }

}  // namespace arch_bench
