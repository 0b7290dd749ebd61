// `arch-bench merge`: the shards of one plan join into the unsharded plan's cells with a decision
// over the whole matrix, `validate` and `diff` accept the result, and every refusal (different
// plans, workloads, tool versions, evidence kinds; duplicate, missing, interrupted or inconsistent
// shards; an existing --output) exits 2 naming the files and writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>

#include "runner/modes/mode.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"
#include "runner/shard/report_rows.hpp"
#include "support/cli.hpp"

namespace arch_bench {
namespace {
using nlohmann::json;
using testing::CliResult;
using testing::read_json;
using testing::run_cli;

// 2 arms x 3 lengths x 2 phases = 12 cells, a few milliseconds each.
const std::string kMatrix =
    " --sequence-lengths 16,32,64 --phase decode,prefill --repeats 3 --warmup 1 --query-heads 2 --head-dim 16"
    " --device cpu --threads 1 -q";

// The reports every test reads, written once: the plan (dry run), an unsharded measured run, the
// three measured shards, three dry-run shards, and dry-run shards of another plan and another
// workload id. Four measured runs in all (each measures the machine's ceilings first).
class Merge : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new testing::TempFolder();
    auto run = [](const std::string& options, const std::string& name) {
      const CliResult result = run_cli("run" + kMatrix + options + " --output '" + path(name) + "'");
      ASSERT_EQ(result.exit_code, 0) << name << ": " << result.err;
    };
    run(" --dry-run", "plan.json");
    run("", "full.json");
    for (int i = 0; i < 3; ++i) {
      run(" --shard " + std::to_string(i) + "/3", "s" + std::to_string(i) + ".json");
      run(" --dry-run --shard " + std::to_string(i) + "/3", "d" + std::to_string(i) + ".json");
    }
    // Dry runs are enough to be refused: plan and workload are checked before anything else.
    run(" --dry-run --seed 7 --shard 0/3", "other-plan-0.json");
    run(" --dry-run --workload-id another-workload --shard 1/3", "other-workload-1.json");
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }

  static std::string path(const std::string& name) { return (*folder_ / name).string(); }
  static json report(const std::string& name) { return read_json(path(name)); }
  // A copy of report `name` changed by `edit`, written as `copy`.
  static std::string edited(const std::string& name, const std::string& copy, const std::function<void(json&)>& edit) {
    json document = report(name);
    edit(document);
    std::ofstream(path(copy)) << document.dump(2);
    return copy;
  }

  // `merge` of the named reports into a fresh file: the result, and whether the file was written. The
  // measured shards read the ceilings of a machine other jobs share, one after another, so they may
  // differ by more than merge's 25%: `options` widens that where a test is not about hardware
  // (RefusesShardsOfDifferentHardware is, with edited reports).
  static CliResult merge(const std::vector<std::string>& names, const std::string& output,
                         const std::string& options = " --ceiling-tolerance 1000%") {
    std::string command = "merge";
    for (const std::string& name : names) command += " '" + path(name) + "'";
    return run_cli(command + " --output '" + path(output) + "'" + options);
  }

  static void expect_refused(const std::vector<std::string>& names, const std::vector<std::string>& messages,
                             const std::string& options = " --ceiling-tolerance 1000%") {
    const std::string output = "refused-" + std::to_string(counter_++) + ".json";
    const CliResult result = merge(names, output, options);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    for (const std::string& message : messages) {
      EXPECT_NE(result.err.find(message), std::string::npos) << "missing '" << message << "' in: " << result.err;
    }
    EXPECT_FALSE(std::filesystem::exists(path(output))) << "a refused merge wrote a file";
  }

  static testing::TempFolder* folder_;
  static int counter_;
};
testing::TempFolder* Merge::folder_ = nullptr;
int Merge::counter_ = 0;

std::vector<std::string> cell_keys(const json& entries) {
  std::vector<std::string> keys;
  for (const json& e : entries) {
    keys.push_back(e["mechanism"].get<std::string>() + "|" + e.value("variant", "") + "|" +
                   e["phase"].get<std::string>() + "|" + std::to_string(e["sequence_length"].get<std::int64_t>()));
  }
  return keys;
}

TEST_F(Merge, ShardsJoinIntoExactlyTheUnshardedPlansCells) {
  const CliResult result = merge({"s2.json", "s0.json", "s1.json"}, "merged.json");  // any order
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json merged = report("merged.json");
  EXPECT_TRUE(schema_errors(merged, "result").empty());
  EXPECT_EQ(cell_keys(merged["metrics"]["rows"]), cell_keys(report("plan.json")["plan"])) << "plan order";
  EXPECT_EQ(merged["metrics"]["rows"].size(), 12u);
  EXPECT_FALSE(merged.contains("shard"));
  EXPECT_EQ(merged["evidence_level"], "cpu_measured");
  EXPECT_EQ(merged["merged_from"]["count"], 3);
  EXPECT_EQ(merged["merged_from"]["plan_hash"], report("s0.json")["shard"]["plan_hash"]);
  ASSERT_EQ(merged["merged_from"]["shards"].size(), 3u);
  EXPECT_EQ(merged["merged_from"]["shards"][1]["hardware"], report("s1.json")["hardware"]);

  // Each row is its shard's row as measured, plus where it was measured.
  std::set<std::int64_t> shards;
  for (const json& row : merged["metrics"]["rows"]) {
    const auto shard = row["shard"].get<std::int64_t>();
    shards.insert(shard);
    EXPECT_EQ(row["host"]["hostname"], report("s" + std::to_string(shard) + ".json")["shard"]["hostname"]);
    EXPECT_TRUE(row["gpu"].is_null()) << "measured on the CPU";
    json original = row;
    for (const char* added : {"shard", "host", "gpu"}) original.erase(added);
    const json shard_report = report("s" + std::to_string(shard) + ".json");
    const json& source = shard_report["metrics"]["rows"];
    EXPECT_NE(std::find(source.begin(), source.end(), original), source.end()) << row["mechanism"];
  }
  EXPECT_EQ(shards, (std::set<std::int64_t>{0, 1, 2}));

  // The decision spans the matrix: every length of each phase, where no shard alone has them all.
  EXPECT_NE(merged["decision"]["verdict"], "inconclusive");
  for (const char* phase : {"decode", "prefill"}) {
    EXPECT_EQ(merged["decision"]["details"]["time_ratio_candidate_over_baseline"][phase].size(), 3u) << phase;
  }
  int partial = 0;
  for (const char* name : {"s0.json", "s1.json", "s2.json"}) {
    const json shard = report(name);
    EXPECT_EQ(shard["decision"]["verdict"], "inconclusive") << name;
    EXPECT_EQ(shard["decision"]["reasons"][0].get<std::string>().rfind("partial matrix", 0), 0u) << name;
    EXPECT_TRUE(shard["decision"]["details"].contains("partial_matrix")) << name;
    const json& ratios = shard["decision"]["details"]["time_ratio_candidate_over_baseline"];
    if (ratios["decode"].size() < 3 || ratios["prefill"].size() < 3) ++partial;
  }
  EXPECT_GT(partial, 0) << "12 cells in 3 shards: some shard misses a length of an arm";

  // `validate` and `diff` take the merged report like any other.
  EXPECT_EQ(run_cli("validate '" + path("merged.json") + "'").exit_code, 0);
  const CliResult diff =
      run_cli("diff '" + path("full.json") + "' '" + path("merged.json") + "' --fail-on never --format json");
  ASSERT_NE(diff.exit_code, 2) << diff.err;
  const json diff_json = json::parse(diff.out);
  EXPECT_EQ(diff_json["rows"].size(), 12u);
  for (const json& row : diff_json["rows"]) {
    EXPECT_NE(row["verdict"], "ADDED");
    EXPECT_NE(row["verdict"], "REMOVED");
  }
}

TEST_F(Merge, DryRunShardsJoinIntoTheDryRunPlan) {
  const CliResult result = merge({"d0.json", "d1.json", "d2.json"}, "merged-dry.json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json merged = report("merged-dry.json");
  EXPECT_EQ(merged["plan"], report("plan.json")["plan"]);
  EXPECT_EQ(merged["evidence_level"], "dry_run");
  EXPECT_EQ(merged["decision"]["verdict"], "dry_run");
  EXPECT_TRUE(merged["metrics"]["rows"].empty());
}

TEST_F(Merge, RefusesMissingShardsNamingThem) {
  // A shard killed mid-run writes no report: the merge names the index to re-run.
  expect_refused({"s0.json", "s2.json"}, {"missing shard 1 of 3", "--shard 1/3"});
  expect_refused({"s1.json"}, {"missing shards 0, 2 of 3"});
}

TEST_F(Merge, RefusesDuplicateShards) {
  expect_refused({"s0.json", "s0.json", "s1.json", "s2.json"}, {"shard 0 of 3 is given 2 times", "s0.json"});
}

TEST_F(Merge, RefusesShardsOfDifferentPlansWorkloadsOrToolVersions) {
  expect_refused({"other-plan-0.json", "d1.json", "d2.json"}, {"different plans", "other-plan-0.json", "d1.json"});
  expect_refused({"d0.json", "other-workload-1.json", "d2.json"},
                 {"different workloads", "identity/workload_id", "other-workload-1.json"});
  const std::string newer =
      edited("s2.json", "newer-tool-2.json", [](json& d) { d["identity"]["tool_version"] = "9.9.9"; });
  expect_refused({"s0.json", "s1.json", newer}, {"different tool versions", "identity/tool_version", newer});
  expect_refused({"d0.json", "s1.json", "s2.json"}, {"different evidence kinds", "d0.json"});
}

// Issue 42: shards whose cpu_model differed merged and reached a decision whose every ratio compared
// two machines (the cost-based split had put each arm in its own shard).
TEST_F(Merge, RefusesShardsOfDifferentHardwareUnlessAllowed) {
  // The three shards as if measured on one machine, then one of them on another.
  std::vector<std::string> same;
  for (const char* name : {"s0.json", "s1.json", "s2.json"}) {
    same.push_back(edited(name, std::string("same-") + name, [](json& d) {
      d["hardware"]["host"]["cpu_model"] = "AMD EPYC 9454";
      d["hardware"]["ceilings"]["peak_gflops"] = 100.0;
      d["hardware"]["ceilings"]["memory_read_gbps"] = 20.0;
      d["hardware"]["ceilings"]["memory_triad_gbps"] = 22.0;
    }));
  }
  const std::string intel = edited(same[1], "intel-1.json", [](json& d) {
    d["hardware"]["host"]["cpu_model"] = "Intel(R) Xeon(R) Platinum 8480+";
  });
  const std::string fast = edited(same[2], "fast-2.json", [](json& d) {
    d["hardware"]["ceilings"]["peak_gflops"] = 130.0;  // 30% apart
  });
  const std::string gpu = edited(same[2], "gpu-2.json", [](json& d) {
    d["hardware"]["gpu"] = {{"name", "NVIDIA H100 80GB HBM3"}};
  });
  const std::string tolerant = " --ceiling-tolerance 1000%";
  ASSERT_EQ(merge(same, "same.json", "").exit_code, 0) << "the same hardware merges at the default tolerance";

  expect_refused({same[0], intel, same[2]}, {"different hardware", "hardware.host.cpu_model", "AMD EPYC 9454",
                                             "Intel(R) Xeon(R) Platinum 8480+", intel, "--allow-hardware-change"}, "");
  expect_refused({same[0], same[1], gpu}, {"different hardware", "hardware.gpu.name", "NVIDIA H100 80GB HBM3", gpu},
                 "");
  expect_refused({same[0], same[1], fast}, {"hardware.ceilings.peak_gflops", "30% apart, beyond the 25% tolerance",
                                            "--ceiling-tolerance"}, "");
  EXPECT_EQ(merge({same[0], same[1], fast}, "within-35.json", " --ceiling-tolerance 35%").exit_code, 0);
  const CliResult bad = merge(same, "bad-tolerance.json", " --ceiling-tolerance 25");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--ceiling-tolerance '25' is ambiguous"), std::string::npos) << bad.err;

  // Allowed: merged, and the merged report says across which hardware.
  const CliResult allowed = merge({same[0], intel, same[2]}, "mixed.json", tolerant + " --allow-hardware-change");
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  const json merged = report("mixed.json");
  EXPECT_TRUE(schema_errors(merged, "result").empty());
  bool noted = false;
  for (const json& note : merged["notes"]) {
    const std::string text = note.get<std::string>();
    noted = noted || (text.find("--allow-hardware-change") != std::string::npos &&
                      text.find("Intel(R) Xeon(R) Platinum 8480+") != std::string::npos);
  }
  EXPECT_TRUE(noted) << merged["notes"].dump(1);
}

// Issue 42: the merged report said git_tree_modified false when a shard's binary came from a modified tree.
TEST_F(Merge, GitTreeModifiedWhenAnyShardsIs) {
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "s" + std::to_string(i) + ".json";
    names.push_back(edited(name, "tree-" + name, [i](json& d) { d["identity"]["git_tree_modified"] = i == 2; }));
  }
  ASSERT_EQ(merge(names, "tree-merged.json").exit_code, 0);
  EXPECT_TRUE(report("tree-merged.json")["identity"]["git_tree_modified"].get<bool>());
  std::vector<std::string> clean;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "s" + std::to_string(i) + ".json";
    clean.push_back(edited(name, "clean-" + name, [](json& d) { d["identity"]["git_tree_modified"] = false; }));
  }
  ASSERT_EQ(merge(clean, "clean-merged.json").exit_code, 0);
  EXPECT_FALSE(report("clean-merged.json")["identity"]["git_tree_modified"].get<bool>());
}

TEST_F(Merge, RefusesAReportThatIsNotAShard) {
  expect_refused({"full.json", "s0.json", "s1.json", "s2.json"}, {"full.json has no `shard` block"});
}

TEST_F(Merge, RefusesInterruptedOrInconsistentShards) {
  const std::string interrupted = edited("s1.json", "interrupted-1.json", [](json& d) {
    d["failure"] = {{"kind", "interrupted"}, {"message", "interrupted by SIGTERM after 2 of 4 cells"}, {"cell", nullptr}};
  });
  expect_refused({"s0.json", interrupted, "s2.json"}, {"shard 1", "was interrupted", "--shard 1/3"});
  const std::string short_rows =
      edited("s1.json", "short-1.json", [](json& d) { d["metrics"]["rows"].erase(d["metrics"]["rows"].size() - 1); });
  expect_refused({"s0.json", short_rows, "s2.json"}, {"short-1.json", "declares"});
  // The same forged hash in every shard: this arch-bench rebuilds another plan from the workload.
  std::vector<std::string> forged;
  for (const char* name : {"s0.json", "s1.json", "s2.json"}) {
    forged.push_back(edited(name, std::string("forged-") + name,
                            [](json& d) { d["shard"]["plan_hash"] = "fnv1a64:0123456789abcdef"; }));
  }
  expect_refused(forged, {"rebuilds their workload into a plan with hash"});
}

TEST_F(Merge, NeverOverwritesTheOutput) {
  std::ofstream(path("taken.json")) << "{}";
  const CliResult result = merge({"s0.json", "s1.json", "s2.json"}, "taken.json");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--output"), std::string::npos) << result.err;
  EXPECT_EQ(testing::read_text(path("taken.json")), "{}");
}

// What merge feeds the mode's decision rule reads the report back without loss.
TEST_F(Merge, RowsAndWorkloadReadBackAsWritten) {
  const json shard = report("s0.json");
  for (const json& row : shard["metrics"]["rows"]) EXPECT_EQ(to_json(row_from_json(row)), row);
  RunReport holder;
  holder.workload = workload_from_report(shard, *find_mode("linear_recurrence"));
  json expected = shard["workload"];
  expected.erase("omp_wait_policy");
  EXPECT_EQ(to_json(holder)["workload"], expected);
}

}  // namespace
}  // namespace arch_bench
