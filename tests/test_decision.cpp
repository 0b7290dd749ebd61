// The linear_recurrence decision rule and its shared building blocks.
#include <gtest/gtest.h>

#include "runner/modes/decision_rules.hpp"
#include "runner/modes/mode.hpp"

namespace arch_bench {
namespace {

Row make_row(const std::string& mechanism, Role role, std::int64_t length, std::int64_t state_bytes,
             double median_ms) {
  Row row;
  row.cell.mechanism = mechanism;
  row.cell.phase = Phase::decode;
  row.cell.sequence_length = length;
  row.role = role;
  row.state_bytes = state_bytes;
  row.stats.median = median_ms;
  row.samples_ms = {median_ms};
  row.tolerance = 1e-2;
  row.accuracy.max_rel_error = 1e-3;
  return row;
}

std::vector<Row> healthy_rows() {
  std::vector<Row> rows;
  for (std::int64_t length : {512, 2048, 8192}) {
    rows.push_back(make_row("softmax_kv", Role::baseline, length, length * 256, length * 1e-4));
    rows.push_back(make_row("linear_attention", Role::candidate, length, 133120, 0.1));
  }
  return rows;
}

Workload decode_workload() {
  Workload workload;
  workload.sequence_lengths = {512, 2048, 8192};
  workload.phases = {Phase::decode};
  return workload;
}

const Mode& linear_recurrence() {
  const Mode* mode = find_mode("linear_recurrence");
  EXPECT_NE(mode, nullptr);
  return *mode;
}

TEST(Decision, AcceptsFixedStateAgainstGrowingHistory) {
  const Decision decision = linear_recurrence().decide(healthy_rows(), decode_workload());
  EXPECT_EQ(decision.verdict, "accept_fixed_state_growth_mechanism");
  // candidate 0.1 ms vs baseline 0.0512, 0.2048, 0.8192 ms: cheaper from 2048 on.
  ASSERT_TRUE(decision.crossover_length.has_value());
  EXPECT_EQ(*decision.crossover_length, 2048);
  EXPECT_NEAR(decision.details["time_ratio_candidate_over_baseline"]["decode"]["8192"].get<double>(), 0.1 / 0.8192,
              1e-12);
}

TEST(Decision, FabricatedGrowingCandidateIsNotAccepted) {
  std::vector<Row> rows = healthy_rows();
  for (Row& row : rows) {
    if (row.role == Role::candidate) row.state_bytes = row.cell.sequence_length * 16;  // grows with L
  }
  const Decision decision = linear_recurrence().decide(rows, decode_workload());
  EXPECT_EQ(decision.verdict, "reject_state_grows_with_length");
  EXPECT_FALSE(decision.reasons.empty());
}

TEST(Decision, NonFiniteOrInaccurateCandidateIsRejected) {
  std::vector<Row> rows = healthy_rows();
  rows[3].accuracy.output_finite = false;
  EXPECT_EQ(linear_recurrence().decide(rows, decode_workload()).verdict, "reject_candidate_outputs_incorrect");
  rows = healthy_rows();
  rows[5].accuracy.max_rel_error = 0.5;
  EXPECT_EQ(linear_recurrence().decide(rows, decode_workload()).verdict, "reject_candidate_outputs_incorrect");
}

TEST(Decision, FailedRowOrSingleLengthIsInconclusive) {
  std::vector<Row> rows = healthy_rows();
  rows[0].status = RowStatus::failed;
  rows[0].reason = "out of memory";
  EXPECT_EQ(linear_recurrence().decide(rows, decode_workload()).verdict, "inconclusive");

  Workload one_length = decode_workload();
  one_length.sequence_lengths = {512};
  const std::vector<Row> two = {healthy_rows()[0], healthy_rows()[1]};
  EXPECT_EQ(linear_recurrence().decide(two, one_length).verdict, "inconclusive");
}

// Issue 8, item 11: `run --qk-scale 1e30` makes every output non-finite, the baseline's too. No
// crossover and no timing verdict come from such rows, and the candidate is not blamed.
TEST(Decision, NonFiniteBaselineMeansTheInputsAreInvalidNotTheCandidate) {
  Workload workload = decode_workload();
  workload.options.set("qk_scale", double{1e30});
  for (bool failed_rows : {false, true}) {  // rows still ok, or failed as non_finite_output by execute
    std::vector<Row> rows = healthy_rows();
    for (Row& row : rows) {
      row.accuracy.output_finite = false;
      if (failed_rows) {
        row.status = RowStatus::failed;
        row.failure_kind = "non_finite_output";
        row.reason = "output has non-finite values";
      }
    }
    const Decision decision = linear_recurrence().decide(rows, workload);
    EXPECT_EQ(decision.verdict, "inconclusive");
    EXPECT_FALSE(decision.crossover_length.has_value());
    ASSERT_FALSE(decision.reasons.empty());
    EXPECT_NE(decision.reasons.front().find("baseline outputs are not finite: the inputs are out of range "
                                            "(--qk-scale 1e+30)"),
              std::string::npos)
        << decision.reasons.front();
    EXPECT_TRUE(decision.details["time_ratio_candidate_over_baseline"]["decode"].empty());
    EXPECT_TRUE(decision.details["crossover_length"]["decode"].is_null());
  }
}

TEST(Decision, NonFiniteRowsGiveNoTimeRatio) {
  std::vector<Row> rows = healthy_rows();
  rows[5].accuracy.output_finite = false;  // candidate at 8192
  const auto ratios = time_ratio_by_length(arm_rows(rows, "softmax_kv", "", Phase::decode),
                                           arm_rows(rows, "linear_attention", "", Phase::decode));
  EXPECT_EQ(ratios.size(), 2u);
  EXPECT_FALSE(ratios.contains(8192));
}

TEST(Decision, PerformerModeDoesNotBlameTheCandidateForANonFiniteBaseline) {
  const Mode* mode = find_mode("performer");
  ASSERT_NE(mode, nullptr);
  Workload workload = decode_workload();
  workload.axes["features"] = {std::int64_t{64}};
  workload.feature_kind = "positive";
  workload.options.set("qk_scale", double{1e30});
  std::vector<Row> rows;
  for (std::int64_t length : {512, 2048}) {
    rows.push_back(make_row("softmax_kv", Role::baseline, length, length * 256, 1));
    Row candidate = make_row("performer", Role::candidate, length, 1000, 0.1);
    candidate.variant = "m=64";
    rows.push_back(candidate);
  }
  for (Row& row : rows) {
    row.accuracy.output_finite = false;
    row.status = RowStatus::failed;
    row.failure_kind = "non_finite_output";
  }
  const Decision decision = mode->decide(rows, workload);
  EXPECT_EQ(decision.verdict, "inconclusive");
  EXPECT_FALSE(decision.crossover_length.has_value());
  EXPECT_NE(decision.reasons.front().find("baseline outputs are not finite"), std::string::npos);
}

TEST(Decision, StateGrowthCheckDoesNotOverflowAtHugeSizes) {
  const std::int64_t big = std::int64_t{1} << 47;
  std::vector<Row> rows = {make_row("a", Role::baseline, big / 2, big / 2 * 8, 1),
                           make_row("a", Role::baseline, big, big * 8 / 2 * 2, 1)};
  rows[1].state_bytes = big * 8;
  std::vector<const Row*> pointers = {&rows[0], &rows[1]};
  EXPECT_TRUE(state_grows_with_length(pointers));
}

TEST(Decision, CrossoverRequiresTheCandidateToStayCheaper) {
  EXPECT_EQ(crossover_length({{512, 0.5}, {2048, 0.4}, {8192, 0.3}}), 512);
  EXPECT_EQ(crossover_length({{512, 0.5}, {2048, 1.2}, {8192, 0.3}}), 8192);
  EXPECT_EQ(crossover_length({{512, 0.5}, {2048, 0.4}, {8192, 1.1}}), std::nullopt);
  EXPECT_EQ(crossover_length({}), std::nullopt);
}

TEST(Decision, StateGrowthNeedsExactProportionality) {
  std::vector<Row> rows = {make_row("a", Role::baseline, 512, 1000, 1), make_row("a", Role::baseline, 1024, 2000, 1)};
  std::vector<const Row*> pointers = {&rows[0], &rows[1]};
  EXPECT_TRUE(state_grows_with_length(pointers));
  rows[1].state_bytes = 2001;
  EXPECT_FALSE(state_grows_with_length(pointers));
  EXPECT_FALSE(state_is_fixed(pointers));
}

}  // namespace
}  // namespace arch_bench
