// Mode `landscape`: every registered mechanism against the exact K/V cache, with per-candidate
// verdicts, a ranking at the longest length and each arm's capacity curve in the report.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "core/errors.hpp"
#include "runner/modes/mode.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/cli_refusals.hpp"

namespace arch_bench {
namespace {

using testing::read_json;
using testing::run_cli;
using testing::TempFolder;

const Mode& landscape() {
  const Mode* mode = find_mode("landscape");
  if (mode == nullptr) throw std::logic_error("landscape mode is not registered");
  return *mode;
}

TEST(Landscape, EveryRegisteredMechanismButTheBaselineIsACandidate) {
  const std::vector<Arm> arms = landscape().arms(landscape().defaults().workload);
  ASSERT_FALSE(arms.empty());
  EXPECT_EQ(arms.front().mechanism, "softmax_kv");
  EXPECT_EQ(arms.front().role, Role::baseline);
  EXPECT_EQ(arms.size(), all_mechanisms().size());
  for (const auto& mechanism : all_mechanisms()) {
    const bool present = std::any_of(arms.begin(), arms.end(), [&](const Arm& arm) {
      return arm.mechanism == mechanism->info().id;
    });
    EXPECT_TRUE(present) << mechanism->info().id;
  }
  // Each arm runs with options its mechanism accepts (performer's map is favor+, not elu).
  for (const Arm& arm : arms) {
    Cell cell;
    cell.mechanism = arm.mechanism;
    cell.options = arm.options;
    EXPECT_FALSE(find_mechanism(arm.mechanism)->unsupported(cell).has_value()) << arm.mechanism;
  }
}

TEST(Landscape, CandidatesCanBeNamedAndUnknownOnesAreRefused) {
  Workload workload = landscape().defaults().workload;
  workload.candidates = {"mamba", "linear_attention"};
  const std::vector<Arm> arms = landscape().arms(workload);
  ASSERT_EQ(arms.size(), 3u);
  EXPECT_EQ(arms[1].mechanism, "mamba");
  EXPECT_EQ(arms[2].mechanism, "linear_attention");
  workload.candidates = {"flash_attention_9"};
  EXPECT_THROW(landscape().arms(workload), UsageError);
  workload.candidates = {"softmax_kv"};
  EXPECT_THROW(landscape().arms(workload), UsageError);
}

TEST(Landscape, ReportCarriesVerdictsRankingAndCapacityCurves) {
  TempFolder folder;
  const auto result = run_cli("run --mode landscape --candidates linear_attention,mamba --sequence-lengths 16,48 "
                              "--phase decode --warmup 0 --repeats 2 --threads 1 --quiet --results-dir '" +
                              folder.path().string() + "' --run-label t");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = read_json(folder / "landscape_t.json");
  EXPECT_TRUE(schema_errors(report, "result").empty());
  EXPECT_EQ(report["decision"]["verdict"], "landscape_complete");
  const auto& candidates = report["decision"]["details"]["candidates"];
  EXPECT_EQ(candidates["linear_attention"]["verdict"], "accept_fixed_state");
  EXPECT_EQ(candidates["mamba"]["verdict"], "accept_fixed_state");
  const auto& ranking = report["decision"]["details"]["ranking"]["decode"];
  EXPECT_EQ(ranking["sequence_length"], 48);
  EXPECT_EQ(ranking["fastest_first"].size(), 3u);
  const auto& capacity = report["capacity"]["mechanisms"];
  ASSERT_TRUE(capacity.contains("softmax_kv"));
  for (const auto& cosine : capacity["softmax_kv"]["mean_cosine"]) EXPECT_GT(cosine.get<double>(), 0.99);
  EXPECT_EQ(capacity["softmax_kv"]["n"], (std::vector<std::int64_t>{16, 32, 64, 128, 256}));
  EXPECT_TRUE(capacity["linear_attention"]["largest_n_cosine_0_9"].is_null());
  EXPECT_EQ(capacity["mamba"]["key_dim"], 16);
}

TEST(Landscape, CandidatesOptionBelongsToTheLandscapeOnly) {
  testing::expect_run_refused("--mode linear_recurrence --candidates mamba", "--candidates applies to --mode landscape");
}

}  // namespace
}  // namespace arch_bench
