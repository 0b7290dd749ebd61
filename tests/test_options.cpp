// core/options (OptionSpec, MechanismOptions, resolved_options), the catalog of the registered
// mechanisms' declarations (mechanisms/option_catalog), and what reads them: the CLI's flags, diff's
// pairing of old and new reports, the report schema.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/options.hpp"
#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"
#include "runner/diff/pair_rows.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"

namespace arch_bench {
namespace {

using testing::CliResult;
using testing::run_cli;

OptionSpec map_spec() {
  return {.key = "feature_map", .type = OptionType::text, .default_value = std::string("elu"), .help = "map",
          .choices = {"elu", "relu"}};
}
OptionSpec count_spec() {
  return {.key = "state_size", .type = OptionType::integer, .default_value = std::int64_t{16}, .help = "N",
          .minimum = 1.0};
}
OptionSpec scale_spec() {
  return {.key = "qk_scale", .type = OptionType::number, .default_value = 1.0, .help = "scale", .minimum = 0.0,
          .exclusive_minimum = true};
}

TEST(OptionSpec, FlagIsTheKeyWithDashes) { EXPECT_EQ(map_spec().flag(), "--feature-map"); }

TEST(OptionSpec, ParsesEachTypeAndChecksIt) {
  EXPECT_EQ(map_spec().parse("relu"), OptionValue(std::string("relu")));
  EXPECT_EQ(count_spec().parse("32"), OptionValue(std::int64_t{32}));
  EXPECT_EQ(scale_spec().parse("0.5"), OptionValue(0.5));
}

TEST(OptionSpec, ErrorsNameTheFlagAndTheAllowedValues) {
  EXPECT_EQ(testing::usage_error_message([] { map_spec().parse("tanh"); }), "--feature-map: unknown feature map 'tanh' (use elu or relu)");
  EXPECT_EQ(testing::usage_error_message([] { count_spec().parse("0"); }), "--state-size must be a positive integer (got 0)");
  EXPECT_EQ(testing::usage_error_message([] { count_spec().parse("x"); }), "--state-size must be an integer >= 1 (got 'x')");
  EXPECT_EQ(testing::usage_error_message([] { count_spec().parse("3.5"); }), "--state-size must be an integer >= 1 (got '3.5')");
  EXPECT_EQ(testing::usage_error_message([] { scale_spec().parse("-1"); }), "--qk-scale must be a positive number (got -1)");
  EXPECT_NE(testing::usage_error_message([] { scale_spec().parse("inf"); }).find("--qk-scale must be a positive number"),
            std::string::npos);
  EXPECT_NE(testing::usage_error_message([] { count_spec().check(std::string("elu")); }).find("--state-size"), std::string::npos);
}

TEST(OptionSpec, FromJsonTypesAndChecksNamingWhere) {
  EXPECT_EQ(scale_spec().from_json(nlohmann::json(2), "row"), OptionValue(2.0));  // an integer is a number
  EXPECT_EQ(count_spec().from_json(nlohmann::json(8), "row"), OptionValue(std::int64_t{8}));
  EXPECT_NE(testing::usage_error_message([] { count_spec().from_json(nlohmann::json(0), "rows[3].options"); }).find("rows[3].options"),
            std::string::npos);
  EXPECT_NE(testing::usage_error_message([] { count_spec().from_json(nlohmann::json("8"), "workload"); }).find("state_size"),
            std::string::npos);
  EXPECT_THROW(map_spec().from_json(nlohmann::json("tanh"), "row"), UsageError);
}

TEST(OptionSpec, ValueSchema) {
  EXPECT_EQ(map_spec().value_schema(), (nlohmann::json{{"enum", {"elu", "relu"}}}));
  EXPECT_EQ(count_spec().value_schema(), (nlohmann::json{{"type", "integer"}, {"minimum", 1}}));
  EXPECT_EQ(scale_spec().value_schema(), (nlohmann::json{{"type", "number"}, {"exclusiveMinimum", 0.0}}));
}

TEST(MechanismOptions, AbsentKeysReadAsDefaults) {
  MechanismOptions options;
  EXPECT_EQ(map_spec().text(options), "elu");
  EXPECT_EQ(count_spec().integer(options), 16);
  EXPECT_EQ(scale_spec().number(options), 1.0);
  options.set("state_size", std::int64_t{0});  // held as given: the mechanism's unsupported() judges it
  EXPECT_EQ(count_spec().integer(options), 0);
  options.erase("state_size");
  EXPECT_TRUE(options.empty());
}

TEST(MechanismOptions, ResolvedKeepsTheSpecsKeysWithDefaults) {
  MechanismOptions given;
  given.set("feature_map", std::string("relu"));
  given.set("features", std::int64_t{64});  // another mechanism's
  const MechanismOptions resolved = resolved_options({map_spec(), count_spec()}, given);
  EXPECT_EQ(resolved.to_json(), (nlohmann::json{{"feature_map", "relu"}, {"state_size", 16}}));
}

TEST(OptionCatalog, TheBuiltInsDeclareTheirOptions) {
  std::vector<std::string> keys;
  for (const DeclaredOption& option : declared_options()) keys.push_back(option.key);
  for (const char* key : {"qk_scale", "feature_map", "features", "favor_stabilizer", "state_size"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
  }
  const DeclaredOption map = declared_option("feature_map", "--option");
  EXPECT_EQ(map.declarations.size(), 2u);  // linear_attention's and performer's
  EXPECT_EQ(map.parse("trig"), OptionValue(std::string("trig")));
  const std::string message = testing::usage_error_message([&] { map.parse("tanh"); });
  EXPECT_NE(message.find("--feature-map"), std::string::npos) << message;
  EXPECT_NE(message.find("linear_attention takes elu or relu"), std::string::npos) << message;
  EXPECT_NE(message.find("performer takes favor+"), std::string::npos) << message;
  EXPECT_NE(testing::usage_error_message([] { declared_option("no_such", "--option"); }).find("no mechanism declares an option 'no_such'"),
            std::string::npos);
  // softmax_kv reads kv_heads (0: one K/V head per query head), softmax_impl (auto: cuDNN on the GPU
  // where it runs) and the harness's qk_scale.
  EXPECT_EQ(resolved_options_of("softmax_kv", {}).to_json(),
            (nlohmann::json{{"kv_heads", 0}, {"qk_scale", 1.0}, {"softmax_impl", "auto"}}));
  // mamba: its N and which CUDA prefill kernel runs (auto: the per-(channel, entry) kernel where it applies).
  EXPECT_EQ(resolved_options_of("mamba", {}).to_json(),
            (nlohmann::json{{"qk_scale", 1.0}, {"scan_kernel", "auto"}, {"state_size", 16}}));
}

TEST(OptionCatalog, ALandscapeArmDropsAValueItsMechanismDoesNotTake) {
  MechanismOptions workload;
  workload.set("feature_map", std::string("relu"));
  const MechanismOptions performer = find_mechanism("performer")->arm_options(workload);
  EXPECT_EQ(performer.find("feature_map"), nullptr);  // runs its default, favor+
  const MechanismOptions linear = find_mechanism("linear_attention")->arm_options(workload);
  EXPECT_EQ(*linear.find("feature_map"), OptionValue(std::string("relu")));
}

// Reports written before the declarations carried all five options on every row; today's rows carry
// what their mechanism reads. The two pair.
TEST(OptionPairing, OldRowsWithEveryOptionPairWithTodaysRows) {
  const nlohmann::json old_options = {{"feature_map", "elu"}, {"features", 256}, {"state_size", 16},
                                      {"qk_scale", 1.0},      {"favor_stabilizer", "causal"}};
  auto row = [](const std::string& mechanism, nlohmann::json options) {
    return nlohmann::json{{"mechanism", mechanism}, {"phase", "decode"}, {"sequence_length", 512}, {"batch", 1},
                          {"heads", 8}, {"head_dim", 64}, {"dtype", "bfloat16"}, {"options", std::move(options)}};
  };
  const nlohmann::json old_rows = {row("softmax_kv", old_options), row("linear_attention", old_options),
                                   row("mamba", old_options)};
  const nlohmann::json new_rows = {row("softmax_kv", {{"qk_scale", 1.0}}),
                                   row("linear_attention", {{"feature_map", "elu"}, {"qk_scale", 1}}),
                                   row("mamba", {{"qk_scale", 1.0}, {"state_size", 16}})};
  for (const RowPair& pair : pair_rows(old_rows, new_rows)) {
    EXPECT_NE(pair.old_row, nullptr) << pair.key.mechanism;
    EXPECT_NE(pair.new_row, nullptr) << pair.key.mechanism;
  }
  // An option the mechanism reads still tells rows apart.
  const nlohmann::json relu = {row("linear_attention", {{"feature_map", "relu"}, {"qk_scale", 1.0}})};
  const auto pairs = pair_rows(nlohmann::json::array({old_rows[1]}), relu);
  EXPECT_EQ(pairs.size(), 2u);
}

TEST(OptionSchema, TheDeclarationsCheckARowsOptions) {
  const nlohmann::json row_options = {{"qk_scale", 1.0}, {"feature_map", "favor+"}, {"features", 0}};
  nlohmann::json report = nlohmann::json::parse(R"({"metrics": {"rows": []}})");
  // Only the options part of the schema is exercised: the errors name the options that do not fit.
  report["metrics"]["rows"].push_back({{"mechanism", "performer"}, {"options", row_options}});
  const std::vector<std::string> errors = schema_errors(report, "result");
  bool features = false;
  for (const std::string& error : errors) features = features || error.find("features") != std::string::npos;
  EXPECT_TRUE(features) << ::testing::PrintToString(errors);
  report["metrics"]["rows"][0]["options"]["features"] = 64;
  for (const std::string& error : schema_errors(report, "result")) EXPECT_EQ(error.find("features"), std::string::npos) << error;
}

TEST(OptionCli, RunRefusesAnUnknownOptionKeyABadValueAndAValueNoMechanismTakes) {
  const std::string tiny = " --sequence-lengths 16 --repeats 1 --warmup 0 --query-heads 1 --head-dim 8 -q --dry-run";
  struct Case {
    std::string arguments, message;
  };
  const std::vector<Case> cases = {
      {"--option no_such=1", "--option: no mechanism declares an option 'no_such'"},
      {"--option state_size", "write KEY=VALUE"},
      {"--option state_size=0", "--state-size must be a positive integer (got 0)"},
      {"--state-size 0", "--state-size must be a positive integer (got 0)"},
      {"--state-size 8 --option state_size=8", "--state-size is given twice"},
      {"--feature-map tanh", "unknown feature map 'tanh'"},
      {"--favor-stabilizer lookahead", "--favor-stabilizer: unknown favor stabilizer 'lookahead' (use causal or published)"},
      {"--qk-scale -1", "--qk-scale must be a positive number"},
      {"--mode performer --features 64,0", "--features must be a positive integer (got 0)"},
      {"--mode performer --features 64,64", "--features: 64 is given twice"},
      // performer's trig is a feature map, but linear_attention (the only arm here) does not take it.
      {"--feature-map trig", "unknown feature map 'trig'"},
  };
  for (const Case& c : cases) {
    const CliResult result = run_cli("run" + tiny + " " + c.arguments);
    EXPECT_EQ(result.exit_code, 2) << c.arguments << "\n" << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.arguments << "\n" << result.err;
  }
}

TEST(OptionCli, HelpListsEachDeclaredFlagAndEachMechanismsChoices) {
  const CliResult result = run_cli("run --help");
  for (const char* flag : {"--feature-map", "--features", "--state-size", "--qk-scale", "--favor-stabilizer", "--option"}) {
    EXPECT_NE(result.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(result.out.find("linear_attention: elu or relu"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("performer: favor+"), std::string::npos) << result.out;
}

TEST(OptionCli, ConformanceRefusesAnOptionTheMechanismDoesNotDeclare) {
  const CliResult result = run_cli("conformance --mechanism softmax_kv --option state_size=8 --describe");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("softmax_kv takes no --state-size"), std::string::npos) << result.err;
  const CliResult described = run_cli("conformance --mechanism mamba --describe");
  EXPECT_EQ(described.exit_code, 0) << described.err;
  EXPECT_NE(described.out.find("`--state-size` (an integer >= 1; default 16)"), std::string::npos) << described.out;
}

TEST(OptionCli, ListNamesEachMechanismsDeclaredOptions) {
  const CliResult listed = run_cli("list --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json listing = nlohmann::json::parse(listed.out);
  for (const auto& mechanism : listing["mechanisms"]) {
    const std::vector<OptionSpec> specs = find_mechanism(mechanism["id"].get<std::string>())->option_specs();
    ASSERT_EQ(mechanism["options"].size(), specs.size()) << mechanism["id"];
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(mechanism["options"][i]["flag"], specs[i].flag());
      EXPECT_EQ(mechanism["options"][i]["default"], option_value_text(specs[i].default_value));
    }
  }
  const CliResult text = run_cli("list");
  EXPECT_NE(text.out.find("option --state-size (an integer >= 1, default 16)"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace arch_bench
