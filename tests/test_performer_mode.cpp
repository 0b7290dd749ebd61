// Mode `performer`: its arms over the workload's feature counts and its decision rule, on
// synthetic rows (no measurement).
#include <gtest/gtest.h>

#include <vector>

#include "runner/modes/mode.hpp"

namespace arch_bench {
namespace {

const Mode& performer_mode() {
  const Mode* mode = find_mode("performer");
  EXPECT_NE(mode, nullptr);
  return *mode;
}

Workload small_workload() {
  Workload workload = performer_mode().defaults().workload;
  workload.sequence_lengths = {512, 2048};
  workload.axes["features"] = {std::int64_t{64}, std::int64_t{256}};
  return workload;
}

// One healthy row; `error` is its approximation error against softmax, `median` its step time.
Row make_row(const Arm& arm, Phase phase, std::int64_t length, double median, double error) {
  Row row;
  row.cell.mechanism = arm.mechanism;
  row.cell.phase = phase;
  row.cell.sequence_length = length;
  row.cell.options = arm.options;
  row.role = arm.role;
  row.variant = arm.variant;
  row.state_bytes = arm.role == Role::baseline ? length * 1024 : 4096;
  row.stats.median = median;
  row.tolerance = 1e-2;
  row.accuracy.max_rel_error = 1e-3;
  if (arm.role == Role::candidate) {
    row.accuracy.approx_rel_l2_vs_softmax = error;
    row.accuracy.approx_max_abs_vs_softmax = error;
  }
  return row;
}

// Rows for every arm, phase and length: the baseline costs `length` ms, every candidate
// `candidate_ms(length)`, with approximation error `error` (trig 10x worse).
template <class CandidateMs>
std::vector<Row> make_rows(const Workload& workload, CandidateMs candidate_ms, double error) {
  std::vector<Row> rows;
  for (const Arm& arm : performer_mode().arms(workload)) {
    for (Phase phase : workload.phases) {
      for (std::int64_t length : workload.sequence_lengths) {
        const bool baseline = arm.role == Role::baseline;
        const OptionValue* map = arm.options.find("feature_map");  // the baseline has none
        const double arm_error = map != nullptr && std::get<std::string>(*map) == "trig" ? 10 * error : error;
        rows.push_back(make_row(arm, phase, length, baseline ? static_cast<double>(length) : candidate_ms(length),
                                arm_error));
      }
    }
  }
  return rows;
}

TEST(PerformerMode, ArmsSweepFeaturesAndAddTrigAtTheLargest) {
  const Workload workload = small_workload();
  const std::vector<Arm> arms = performer_mode().arms(workload);
  ASSERT_EQ(arms.size(), 4u);
  EXPECT_EQ(arms[0].mechanism, "softmax_kv");
  EXPECT_EQ(arms[0].role, Role::baseline);
  EXPECT_EQ(arms[1].variant, "m=64");
  EXPECT_EQ(std::get<std::string>(*arms[1].options.find("feature_map")), "favor+");
  EXPECT_EQ(std::get<std::int64_t>(*arms[1].options.find("features")), 64);
  EXPECT_EQ(arms[2].variant, "m=256");
  EXPECT_EQ(arms[3].variant, "trig m=256");
  EXPECT_EQ(std::get<std::string>(*arms[3].options.find("feature_map")), "trig");
  const ModeDefaults defaults = performer_mode().defaults();
  EXPECT_EQ(defaults.experiment, "performer_favor");
  EXPECT_EQ(defaults.workload.phases.size(), 2u);
}

TEST(PerformerMode, AcceptsWhenAccurateAndCheaperInEveryPhase) {
  const Workload workload = small_workload();
  // Cheaper only from 2048 on.
  const auto rows = make_rows(workload, [](std::int64_t length) { return length == 512 ? 600.0 : 100.0; }, 0.05);
  const Decision decision = performer_mode().decide(rows, workload);
  EXPECT_EQ(decision.verdict, "accept_performer_approximation") << decision.reasons.front();
  ASSERT_TRUE(decision.crossover_length);
  EXPECT_EQ(*decision.crossover_length, 2048);
  EXPECT_EQ(decision.details["crossover_length"]["prefill"], 2048);
  EXPECT_EQ(decision.details["chosen_variant"], "m=256");
  // The trig arm's 10x larger error is reported, not decisive.
  EXPECT_DOUBLE_EQ(decision.details["variants"]["trig m=256"]["decode"]["approx_rel_l2_vs_softmax"]["512"], 0.5);
}

TEST(PerformerMode, RejectsLargeErrorAndNoCrossover) {
  const Workload workload = small_workload();
  const auto cheap = [](std::int64_t) { return 1.0; };
  EXPECT_EQ(performer_mode().decide(make_rows(workload, cheap, 0.5), workload).verdict,
            "reject_performer_approximation_error");
  const auto dear = [](std::int64_t length) { return 2.0 * static_cast<double>(length); };
  const Decision decision = performer_mode().decide(make_rows(workload, dear, 0.05), workload);
  EXPECT_EQ(decision.verdict, "reject_performer_not_cheaper");
  EXPECT_FALSE(decision.crossover_length);
}

TEST(PerformerMode, UnhealthyRowsDecideOnlyForTheChosenArm) {
  const Workload workload = small_workload();
  std::vector<Row> rows = make_rows(workload, [](std::int64_t) { return 1.0; }, 0.05);
  for (Row& row : rows) {
    if (row.variant == "trig m=256") row.accuracy.max_rel_error = 0.5;  // out of tolerance
  }
  Decision decision = performer_mode().decide(rows, workload);
  EXPECT_EQ(decision.verdict, "accept_performer_approximation");
  for (Row& row : rows) {
    if (row.variant == "m=256") row.accuracy.max_rel_error = 0.5;
  }
  decision = performer_mode().decide(rows, workload);
  EXPECT_EQ(decision.verdict, "reject_candidate_outputs_incorrect");
  rows.front().status = RowStatus::failed;  // a baseline row
  for (Row& row : rows) row.accuracy.max_rel_error = 1e-3;
  EXPECT_EQ(performer_mode().decide(rows, workload).verdict, "inconclusive");
}

}  // namespace
}  // namespace arch_bench
