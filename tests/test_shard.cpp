// Sharding a plan (`run --shard I/N`): --shard parsing (I/N and Slurm's job-array variables), the
// cost-balanced split (deterministic, a partition of the plan, LPT-balanced), the plan hash, and the
// shard's partial decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "core/errors.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/modes/mode.hpp"
#include "runner/shard/cost_model.hpp"
#include "runner/shard/plan_hash.hpp"
#include "runner/shard/shard.hpp"
#include "runner/shard/shard_spec.hpp"
#include "runner/shard/split.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"

namespace arch_bench {
namespace {

EnvironmentLookup environment_of(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

// The UsageError message of parse_shard(text, environment), or "" when it parsed.
std::string refusal(const std::string& text, const EnvironmentLookup& environment = environment_of({})) {
  return testing::usage_error_or_empty([&] { parse_shard(text, environment); });
}

TEST(ShardOption, ParsesIndexOverCount) {
  const ShardSpec first = parse_shard("0/1", environment_of({}));
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.count, 1);
  const ShardSpec last = parse_shard("6/7", environment_of({}));
  EXPECT_EQ(last.index, 6);
  EXPECT_EQ(last.count, 7);
  EXPECT_EQ(last.source, "command_line");
}

TEST(ShardOption, RefusesBadValuesNamingTheOption) {
  for (const std::string bad : {"3/3", "4/3", "0/0", "a/3", "1/b", "-1/3", "1/-3", "1/", "/3", "", "13", "1/2/3",
                                 " 1/3", "1/3 ", "0x1/3", "+1/3", "1.0/3", "99999999999/100000000000"}) {
    const std::string message = refusal(bad);
    EXPECT_NE(message.find("--shard"), std::string::npos) << "'" << bad << "' gave: " << message;
  }
  EXPECT_NE(refusal("3/3").find("below the count"), std::string::npos);
  EXPECT_NE(refusal("0/0").find("at least 1"), std::string::npos);
}

TEST(ShardOption, AutoReadsTheSlurmArrayVariables) {
  const ShardSpec plain =
      parse_shard("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_EQ(plain.index, 2);
  EXPECT_EQ(plain.count, 3);
  EXPECT_EQ(plain.source, "slurm");
  // sbatch --array=1-3: task ids 1..3 are shards 0..2.
  const ShardSpec offset = parse_shard("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "3"},
                                                               {"SLURM_ARRAY_TASK_MIN", "1"},
                                                               {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_EQ(offset.index, 2);
  // sbatch --array=0-8:4: task ids 0, 4, 8 are shards 0..2.
  const ShardSpec stepped = parse_shard("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "4"},
                                                                {"SLURM_ARRAY_TASK_MIN", "0"},
                                                                {"SLURM_ARRAY_TASK_STEP", "4"},
                                                                {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_EQ(stepped.index, 1);
  EXPECT_EQ(stepped.count, 3);
}

TEST(ShardOption, AutoRefusesMissingOrInconsistentVariables) {
  EXPECT_NE(refusal("auto").find("SLURM_ARRAY_TASK_ID is not set"), std::string::npos) << refusal("auto");
  EXPECT_NE(refusal("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "0"}})).find("SLURM_ARRAY_TASK_COUNT"),
            std::string::npos);
  EXPECT_NE(refusal("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "2"}}))
                .find("not a whole number"),
            std::string::npos);
  // --array=1,5,9 (gaps) with a list: task 5 cannot be numbered from MIN=1 and COUNT=3 by arithmetic.
  const std::string gaps = refusal("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "5"},
                                                           {"SLURM_ARRAY_TASK_MIN", "1"},
                                                           {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_NE(gaps.find("only 3 tasks"), std::string::npos) << gaps;
  EXPECT_NE(refusal("auto", environment_of({{"SLURM_ARRAY_TASK_ID", "0"},
                                            {"SLURM_ARRAY_TASK_MIN", "1"},
                                            {"SLURM_ARRAY_TASK_COUNT", "3"}}))
                .find("--shard auto"),
            std::string::npos);
}

void expect_partition(const std::vector<std::vector<std::size_t>>& bins, std::size_t cells) {
  std::vector<int> seen(cells, 0);
  for (const auto& bin : bins) {
    EXPECT_TRUE(std::is_sorted(bin.begin(), bin.end())) << "a shard's cells are in plan order";
    for (std::size_t index : bin) {
      ASSERT_LT(index, cells);
      ++seen[index];
    }
  }
  for (std::size_t index = 0; index < cells; ++index) EXPECT_EQ(seen[index], 1) << "plan cell " << index;
}

TEST(ShardSplit, IsAPartitionBalancedByLongestProcessingTimeFirst) {
  const std::vector<std::int64_t> costs{5, 90, 7, 7, 40, 3, 60, 7, 1, 30, 2, 8};
  for (std::int64_t count : {1, 2, 3, 5, 12}) {
    const auto bins = split_by_cost(costs, count);
    ASSERT_EQ(bins.size(), static_cast<std::size_t>(count));
    expect_partition(bins, costs.size());
    EXPECT_EQ(bins, split_by_cost(costs, count)) << "deterministic";
    // List scheduling bound: the most loaded shard exceeds the mean by less than the largest cell.
    const std::int64_t total = std::accumulate(costs.begin(), costs.end(), std::int64_t{0});
    std::int64_t worst = 0;
    for (const auto& bin : bins) {
      std::int64_t load = 0;
      for (std::size_t index : bin) load += costs[index];
      worst = std::max(worst, load);
    }
    EXPECT_LE(worst, total / count + 90) << count << " shards";
  }
  // The three most expensive cells (90, 60, 40) go to three different shards.
  const auto three = split_by_cost(costs, 3);
  std::set<std::size_t> holders;
  for (std::size_t cell : {std::size_t{1}, std::size_t{6}, std::size_t{4}}) {
    for (std::size_t bin = 0; bin < three.size(); ++bin) {
      if (std::find(three[bin].begin(), three[bin].end(), cell) != three[bin].end()) holders.insert(bin);
    }
  }
  EXPECT_EQ(holders.size(), 3u);
  // Worked by hand: 90 alone; 60+8+7+7+3 = 85; 40+30+7+5+2+1 = 85.
  EXPECT_EQ(three[0], (std::vector<std::size_t>{1}));
  EXPECT_EQ(three[1], (std::vector<std::size_t>{2, 5, 6, 7, 11}));
  EXPECT_EQ(three[2], (std::vector<std::size_t>{0, 3, 4, 8, 9, 10}));
}

TEST(ShardSplit, EqualCostsAreDealtInPlanOrder) {
  const auto bins = split_by_cost(std::vector<std::int64_t>(7, 10), 3);
  EXPECT_EQ(bins[0], (std::vector<std::size_t>{0, 3, 6}));
  EXPECT_EQ(bins[1], (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(bins[2], (std::vector<std::size_t>{2, 5}));
}

Workload long_matrix() {
  Workload workload = find_mode("linear_recurrence")->defaults().workload;
  workload.sequence_lengths = {512, 2048, 8192, 32768};
  workload.phases = {Phase::decode, Phase::prefill};
  workload.threads = 4;
  return workload;
}

TEST(ShardSplit, PredictedCostGrowsWithLengthAndSpreadsTheLongSoftmaxCells) {
  const Mode& mode = *find_mode("linear_recurrence");
  const Workload workload = long_matrix();
  const Plan plan = build_plan(mode, workload, "cpu");
  ASSERT_EQ(plan.cells.size(), 16u);
  std::vector<std::int64_t> costs;
  for (const PlannedCell& planned : plan.cells) costs.push_back(predicted_cost_us(planned, workload, "cpu"));
  // Per arm and phase, a longer context costs at least as much; softmax prefill grows faster than linearly.
  std::map<std::string, std::vector<std::int64_t>> by_arm;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    by_arm[plan.cells[i].cell.mechanism + phase_name(plan.cells[i].cell.phase)].push_back(costs[i]);
  }
  for (const auto& [arm, series] : by_arm) EXPECT_TRUE(std::is_sorted(series.begin(), series.end())) << arm;
  const auto& softmax_prefill = by_arm["softmax_kvprefill"];
  EXPECT_GT(softmax_prefill[3], 8 * softmax_prefill[2]) << "L^2: 4x the length, more than 8x the cost";

  // With 4 shards, the 4 costliest cells are in 4 different shards.
  std::vector<std::size_t> by_cost(plan.cells.size());
  std::iota(by_cost.begin(), by_cost.end(), std::size_t{0});
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](auto a, auto b) { return costs[a] > costs[b]; });
  std::set<std::int64_t> holders;
  std::vector<std::size_t> all;
  std::set<std::string> hashes;
  for (std::int64_t index = 0; index < 4; ++index) {
    const ShardSelection selection = select_shard({index, 4, "command_line"}, plan, mode.id(), "cpu", workload);
    hashes.insert(selection.plan_hash);
    EXPECT_EQ(selection.plan_cells, plan.cells.size());
    ASSERT_EQ(selection.plan.cells.size(), selection.plan_indices.size());
    for (std::size_t i = 0; i < selection.plan_indices.size(); ++i) {
      const std::size_t cell = selection.plan_indices[i];
      all.push_back(cell);
      EXPECT_EQ(selection.plan.cells[i].cell.mechanism, plan.cells[cell].cell.mechanism);
      EXPECT_EQ(selection.plan.cells[i].cell.sequence_length, plan.cells[cell].cell.sequence_length);
      if (std::find(by_cost.begin(), by_cost.begin() + 4, cell) != by_cost.begin() + 4) holders.insert(index);
    }
  }
  EXPECT_EQ(holders.size(), 4u);
  EXPECT_EQ(hashes.size(), 1u) << "every shard of one plan carries the same plan hash";
  std::sort(all.begin(), all.end());
  std::vector<std::size_t> expected(plan.cells.size());
  std::iota(expected.begin(), expected.end(), std::size_t{0});
  EXPECT_EQ(all, expected) << "the shards together hold every cell once";
}

TEST(ShardSplit, MoreShardsThanCellsIsRefused) {
  const Mode& mode = *find_mode("linear_recurrence");
  Workload workload = long_matrix();
  workload.sequence_lengths = {512};
  workload.phases = {Phase::decode};
  const Plan plan = build_plan(mode, workload, "cpu");
  ASSERT_EQ(plan.cells.size(), 2u);
  EXPECT_NO_THROW(select_shard({1, 2, "command_line"}, plan, mode.id(), "cpu", workload));
  try {
    select_shard({0, 3, "command_line"}, plan, mode.id(), "cpu", workload);
    FAIL() << "3 shards of 2 cells";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("--shard 0/3"), std::string::npos) << error.what();
  }
}

TEST(PlanHash, SameForTheSamePlanOtherwiseDifferent) {
  const Mode& mode = *find_mode("linear_recurrence");
  const Workload workload = long_matrix();
  const std::string hash = plan_hash(mode.id(), "cpu", workload, build_plan(mode, workload, "cpu"));
  EXPECT_EQ(hash.rfind("fnv1a64:", 0), 0u);
  EXPECT_EQ(hash.size(), 8u + 16u);
  Workload other_threads = workload;
  other_threads.threads = 64;  // each node's default; not part of the plan
  EXPECT_EQ(plan_hash(mode.id(), "cpu", other_threads, build_plan(mode, other_threads, "cpu")), hash);
  Workload more_repeats = workload;
  more_repeats.repeats += 1;
  EXPECT_NE(plan_hash(mode.id(), "cpu", more_repeats, build_plan(mode, more_repeats, "cpu")), hash);
  Workload other_scale = workload;
  other_scale.options.set("qk_scale", double{0.5});
  EXPECT_NE(plan_hash(mode.id(), "cpu", other_scale, build_plan(mode, other_scale, "cpu")), hash);
  EXPECT_NE(plan_hash(mode.id(), "cuda", workload, build_plan(mode, workload, "cpu")), hash);
  // FNV-1a 64 test vectors (Fowler/Noll/Vo): "" and "a".
  EXPECT_EQ(fnv1a64_hex(""), "fnv1a64:cbf29ce484222325");
  EXPECT_EQ(fnv1a64_hex("a"), "fnv1a64:af63dc4c8601ec8c");
}

TEST(ShardDecision, AShardAloneIsInconclusiveAndKeepsItsRowsVerdictInDetails) {
  const Mode& mode = *find_mode("linear_recurrence");
  const Workload workload = long_matrix();
  const ShardSelection selection =
      select_shard({1, 3, "command_line"}, build_plan(mode, workload, "cpu"), mode.id(), "cpu", workload);
  Decision decision;
  decision.verdict = "accept_fixed_state_growth_mechanism";
  decision.crossover_length = 2048;
  decision.reasons = {"from the shard's rows"};
  mark_partial_decision(decision, selection);
  EXPECT_EQ(decision.verdict, "inconclusive");
  EXPECT_FALSE(decision.crossover_length.has_value());
  ASSERT_FALSE(decision.reasons.empty());
  EXPECT_NE(decision.reasons.front().find("partial matrix: shard 1 of 3"), std::string::npos);
  EXPECT_NE(decision.next_action.find("arch-bench merge"), std::string::npos);
  const auto& kept = decision.details["partial_matrix"]["decision_from_shard_rows"];
  EXPECT_EQ(kept["verdict"], "accept_fixed_state_growth_mechanism");
  EXPECT_EQ(kept["crossover_length"], 2048);
}

TEST(ShardBlock, NamesTheNodeTheSlurmIdsAndTheCellsHeld) {
  const Mode& mode = *find_mode("linear_recurrence");
  const Workload workload = long_matrix();
  const ShardSelection selection =
      select_shard({2, 3, "slurm"}, build_plan(mode, workload, "cpu"), mode.id(), "cpu", workload);
  const nlohmann::json block =
      shard_json(selection, environment_of({{"SLURM_JOB_ID", "77"}, {"SLURM_ARRAY_TASK_ID", "2"}}));
  EXPECT_EQ(block["index"], 2);
  EXPECT_EQ(block["count"], 3);
  EXPECT_EQ(block["source"], "slurm");
  EXPECT_EQ(block["plan_cells"], 16);
  EXPECT_EQ(block["slurm"]["SLURM_JOB_ID"], "77");
  EXPECT_FALSE(block["hostname"].get<std::string>().empty());
  ASSERT_EQ(block["cells"].size(), selection.plan_indices.size());
  std::int64_t sum = 0;
  for (const auto& cell : block["cells"]) sum += cell["predicted_cost_us"].get<std::int64_t>();
  EXPECT_EQ(block["predicted_cost_us"], sum);
  EXPECT_TRUE(shard_json(selection, environment_of({}))["slurm"].is_null());
}

// Through the executable: bad values exit 2 naming --shard, and no --shard changes nothing.
TEST(ShardCli, BadShardValuesExit2NamingTheOptionAndWriteNothing) {
  for (const char* name : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"}) ::unsetenv(name);
  testing::TempFolder folder;
  for (const std::string value : {"3/3", "0/0", "x", "auto", "1/2/3"}) {
    const auto output = folder / "out.json";
    const testing::CliResult result = testing::run_cli(
        "run --dry-run --sequence-lengths 16 --query-heads 1 --head-dim 8 -q --output '" + output.string() +
        "' --shard '" + value + "'");
    EXPECT_EQ(result.exit_code, 2) << value << ": " << result.err;
    EXPECT_NE(result.err.find("--shard"), std::string::npos) << value << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << value;
  }
}

TEST(ShardCli, DryRunShardHoldsItsCellsAndAPlainRunHasNoShardBlock) {
  testing::TempFolder folder;
  const std::string tiny = " --dry-run --sequence-lengths 16,32 --phase decode,prefill --query-heads 1 --head-dim 8 -q";
  ASSERT_EQ(testing::run_cli("run" + tiny + " --output '" + (folder / "plain.json").string() + "'").exit_code, 0);
  EXPECT_FALSE(testing::read_json(folder / "plain.json").contains("shard"));
  ASSERT_EQ(testing::run_cli("run" + tiny + " --shard 1/3 --output '" + (folder / "s1.json").string() + "'").exit_code,
            0);
  const nlohmann::json shard = testing::read_json(folder / "s1.json");
  EXPECT_EQ(shard["shard"]["index"], 1);
  EXPECT_EQ(shard["shard"]["plan_cells"], 8);
  EXPECT_EQ(shard["plan"].size(), shard["shard"]["cells"].size());
  EXPECT_LT(shard["plan"].size(), 8u);
}

}  // namespace
}  // namespace arch_bench
