// Reading files a user names (runner/pipeline/input_file, runner/report/json_input) and validating what
// they hold (runner/report/schema_validation): hostile input is a UsageError (exit 2), never a crash
// or a hang. The regression cases of issue 8 (defects 3, 4 and 12) are here; 1 is in test_diff.cpp,
// 2 in test_npy.cpp.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "runner/pipeline/input_file.hpp"
#include "runner/report/json_input.hpp"
#include "runner/report/schema_validation.hpp"
#include "support/cli.hpp"
#include "support/usage_error.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench {
namespace {

using testing::run_cli;
using testing::TempFolder;
namespace fs = std::filesystem;

const fs::path kSource = testing::source_dir();
const fs::path kCommittedReport = kSource / "results" / "45_linear_recurrent_state_cpp-kernels-2core.json";

using testing::usage_error_or_empty;

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Sets ARCH_BENCH_MAX_INPUT_BYTES for one scope.
class ScopedCap {
 public:
  explicit ScopedCap(const char* value) { ::setenv(kMaxInputBytesVariable, value, 1); }
  ~ScopedCap() { ::unsetenv(kMaxInputBytesVariable); }
  ScopedCap(const ScopedCap&) = delete;
  ScopedCap& operator=(const ScopedCap&) = delete;
};

// ---------------------------------------------------------------------------------------------
// Regular files under a size cap (defect 12)

TEST(InputFile, ReadsARegularFileWhole) {
  TempFolder folder;
  write(folder / "a.json", std::string("{\"x\": 1}\n"));
  EXPECT_EQ(read_input_file(folder / "a.json", "report"), "{\"x\": 1}\n");
}

TEST(InputFile, MissingFileAndFolderAreNamed) {
  TempFolder folder;
  const std::string missing = usage_error_or_empty([&] { read_input_file(folder / "none.json", "report"); });
  EXPECT_NE(missing.find("none.json: cannot be read: no such file"), std::string::npos) << missing;
  const std::string folder_message = usage_error_or_empty([&] { read_input_file(folder.path(), "report"); });
  EXPECT_NE(folder_message.find("is a folder, not a report"), std::string::npos) << folder_message;
}

TEST(InputFile, DevZeroIsRefusedBeforeReading) {
  const std::string message = usage_error_or_empty([] { read_input_file("/dev/zero", "result report"); });
  EXPECT_NE(message.find("/dev/zero: is a character device"), std::string::npos) << message;
}

TEST(InputFile, FifoIsRefusedWithoutBlocking) {
  TempFolder folder;
  const fs::path fifo = folder / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message = usage_error_or_empty([&] { read_input_file(fifo, "result report"); });
  EXPECT_NE(message.find("is a FIFO"), std::string::npos) << message;
}

TEST(InputFile, FilesOverTheCapAreRefusedAndTheCapIsAnEnvironmentVariable) {
  TempFolder folder;
  write(folder / "big.json", std::string(2048, ' '));
  {
    const ScopedCap cap("1K");
    const std::string message = usage_error_or_empty([&] { read_input_file(folder / "big.json", "report"); });
    EXPECT_NE(message.find("larger than the 1024 bytes cap"), std::string::npos) << message;
    EXPECT_NE(message.find("ARCH_BENCH_MAX_INPUT_BYTES"), std::string::npos) << message;
  }
  {
    const ScopedCap cap("4096");
    EXPECT_EQ(read_input_file(folder / "big.json", "report").size(), 2048u);
  }
  {
    const ScopedCap cap("lots");
    const std::string message = usage_error_or_empty([&] { read_input_file(folder / "big.json", "report"); });
    EXPECT_NE(message.find("ARCH_BENCH_MAX_INPUT_BYTES='lots'"), std::string::npos) << message;
  }
  EXPECT_EQ(max_input_bytes(), kDefaultMaxInputBytes);
}

TEST(InputFile, ByteSizes) {
  EXPECT_EQ(parse_byte_size("1024"), 1024u);
  EXPECT_EQ(parse_byte_size("256M"), 256u << 20);
  EXPECT_EQ(parse_byte_size("1GiB"), 1u << 30);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("-1"), 0u);
  EXPECT_EQ(parse_byte_size("12T"), 0u);
  EXPECT_EQ(parse_byte_size("99999999999999999999"), 0u);
  EXPECT_EQ(parse_byte_size("17179869184G"), 0u);  // 2^64 bytes
}

// ---------------------------------------------------------------------------------------------
// Nesting depth and number range (defects 1 and 4 at their source)

TEST(JsonInput, NestingIsBoundedAndBracketsInStringsDoNotCount) {
  EXPECT_NO_THROW(parse_json_input(nested_arrays(kMaxJsonDepth), "ok.json"));
  const std::string message =
      usage_error_or_empty([] { parse_json_input(nested_arrays(kMaxJsonDepth + 1), "deep.json"); });
  EXPECT_NE(message.find("deep.json: not a usable JSON document: arrays and objects nest more than 64"),
            std::string::npos)
      << message;
  EXPECT_NE(usage_error_or_empty([] { parse_json_input(nested_arrays(100000), "deep.json"); }), "");
  EXPECT_NE(usage_error_or_empty([] { parse_json_input("{\"a\":" + std::string(100000, '{'), "open.json"); }), "");
  const std::string text = "{\"s\": \"" + std::string(1000, '[') + "\\\"{\"}";
  EXPECT_EQ(parse_json_input(text, "string.json")["s"].get<std::string>().size(), 1002u);
}

TEST(JsonInput, NumbersOutOfDoubleRangeAreBadInput) {
  for (const char* text : {"{\"x\": 1e400}", "[-1e400]", "1E+99999"}) {
    const std::string message = usage_error_or_empty([&] { parse_json_input(text, "n.json"); });
    EXPECT_NE(message.find("n.json: not a usable JSON document"), std::string::npos) << text << ": " << message;
    EXPECT_NE(message.find("number overflow"), std::string::npos) << message;
  }
  EXPECT_EQ(parse_json_input("[1e300, 18446744073709551616]", "n.json").size(), 2u);
}

TEST(JsonInput, ParseErrorsNameTheFileAndQuoteLittle) {
  const std::string message =
      usage_error_or_empty([] { parse_json_input("[\"" + std::string(1 << 20, 'a'), "bad.json"); });
  EXPECT_NE(message.find("bad.json: not valid JSON"), std::string::npos) << message.substr(0, 400);
  EXPECT_LT(message.size(), 1000u);
}

// ---------------------------------------------------------------------------------------------
// Long strings against patterns (defect 3)

TEST(SchemaStrings, EveryPatternedStringHasAMaxLengthBelowTheCut) {
  for (const char* name : {"result", "profile", "preflight", "diff"}) {
    const nlohmann::json schema = nlohmann::json::parse(schema_text(name));
    std::vector<std::pair<std::string, const nlohmann::json*>> pending{{"", &schema}};
    while (!pending.empty()) {
      auto [where, node] = pending.back();
      pending.pop_back();
      if (node->is_object()) {
        // valijson matches object keys (patternProperties, propertyNames) and string formats with
        // std::regex too, on text that is not cut: none may appear. (A property may be named "format".)
        EXPECT_FALSE(node->contains("patternProperties")) << name << " schema " << where;
        EXPECT_FALSE(node->contains("propertyNames")) << name << " schema " << where;
        EXPECT_FALSE(node->contains("format") && node->at("format").is_string()) << name << " schema " << where;
        if (node->contains("pattern")) {
          ASSERT_TRUE(node->contains("maxLength")) << name << " schema " << where;
          EXPECT_LT(node->at("maxLength").get<std::size_t>(), kSchemaCheckedStringLength) << name << where;
        }
        if (node->contains("enum")) {
          for (const auto& value : node->at("enum")) {
            if (value.is_string()) {
              EXPECT_LT(value.get<std::string>().size(), kSchemaCheckedStringLength);
            }
          }
        }
        for (const auto& [key, child] : node->items()) pending.emplace_back(where + "/" + key, &child);
      } else if (node->is_array()) {
        for (const auto& child : *node) pending.emplace_back(where + "/[]", &child);
      }
    }
  }
}

TEST(SchemaStrings, A50000CharacterRunLabelIsOneViolationNotAStackOverflow) {
  nlohmann::json report = read_json_input(kCommittedReport, "report");
  ASSERT_TRUE(schema_errors(report, "result").empty());
  report["identity"]["run_label"] = std::string(50000, 'a');
  const std::vector<std::string> errors = schema_errors(report, "result");
  ASSERT_FALSE(errors.empty());
  std::string all;
  for (const std::string& error : errors) all += error + "\n";
  EXPECT_NE(all.find("run_label"), std::string::npos) << all;
  // A label of valid characters fails only its maxLength; one with a bad character past the cut
  // fails too.
  report["identity"]["run_label"] = std::string(255, 'a');
  EXPECT_TRUE(schema_errors(report, "result").empty());
  report["identity"]["run_label"] = std::string(256, 'a');
  EXPECT_FALSE(schema_errors(report, "result").empty());
}

// valijson reads integers as int64: 2^63 wrapped to a negative number and was refused with "Expected
// number greater than or equal to 0", naming the wrong problem.
TEST(SchemaNumbers, AnIntegerBeyondInt64IsRefusedForWhatItIs) {
  nlohmann::json report = read_json_input(kCommittedReport, "report");
  report["metrics"]["rows"][0]["state_bytes"] = std::uint64_t{1} << 63;
  report["metrics"]["rows"][2]["peak_memory_bytes"] = ~std::uint64_t{0};
  std::vector<std::string> errors = schema_errors(report, "result");
  ASSERT_EQ(errors.size(), 2u) << (errors.empty() ? "" : errors.back());
  EXPECT_EQ(errors[0], "<root>[metrics][rows][0][state_bytes]: 9223372036854775808 is larger than the largest "
                       "integer a report may hold (2^63 - 1 = 9223372036854775807)");
  EXPECT_EQ(errors[1].rfind("<root>[metrics][rows][2][peak_memory_bytes]: 18446744073709551615 is larger", 0), 0u)
      << errors[1];
  // The largest int64 is a valid count; the rest of the document is still judged alongside.
  report["metrics"]["rows"][2]["peak_memory_bytes"] = std::numeric_limits<std::int64_t>::max();
  report["metrics"]["rows"][1]["state_bytes"] = -1;
  report["identity"]["run_label"] = std::string(50000, 'a');
  errors = schema_errors(report, "result");
  std::string all;
  for (const std::string& error : errors) all += error + "\n";
  EXPECT_NE(all.find("[rows][0][state_bytes]: 9223372036854775808 is larger"), std::string::npos) << all;
  EXPECT_NE(all.find("[rows][1][state_bytes]: Expected number greater than or equal to 0"), std::string::npos) << all;
  EXPECT_NE(all.find("run_label"), std::string::npos) << all;
  EXPECT_EQ(all.find("peak_memory_bytes"), std::string::npos) << all;
}

TEST(SchemaStrings, LongUnpatternedStringsStayValid) {
  nlohmann::json report = read_json_input(kCommittedReport, "report");
  report["identity"]["command_line"] = std::string(1 << 20, 'x') + "\xc3\xa9";
  EXPECT_TRUE(schema_errors(report, "result").empty());
}

TEST(SchemaStrings, A100000CharacterProfileIdIsAViolation) {
  nlohmann::json profile = read_json_input(kSource / "profiles" / "ARCH-CPU-MECHANISM.json", "profile");
  profile["id"] = std::string(100000, 'P');
  EXPECT_FALSE(schema_errors(profile, "profile").empty());
}

// ---------------------------------------------------------------------------------------------
// The executable: `validate` on hostile files exits 2 and promptly

TEST(ValidateCli, DevZeroFifoAndHugeNumbersAreExitTwo) {
  TempFolder folder;
  const fs::path fifo = folder / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write(folder / "number.json", "{\"schema_version\": 1e400}");
  for (const std::string& file : {std::string("/dev/zero"), fifo.string(), (folder / "number.json").string()}) {
    const auto r = run_cli("validate '" + file + "'");
    EXPECT_EQ(r.exit_code, 2) << file << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
}

TEST(ValidateCli, LongRunLabelIsInvalidNotACrash) {
  TempFolder folder;
  nlohmann::json report = read_json_input(kCommittedReport, "report");
  report["identity"]["run_label"] = std::string(50000, 'a');
  write(folder / "long.json", report.dump());
  const auto r = run_cli("validate '" + (folder / "long.json").string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("run_label"), std::string::npos) << r.out;
}

TEST(ValidateCli, InputCapComesFromTheEnvironment) {
  const auto r = run_cli("validate '" + kCommittedReport.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string capped = "env ARCH_BENCH_MAX_INPUT_BYTES=1K ";
  const std::string command =
      capped + "'" + testing::executable_path() + "' validate '" + kCommittedReport.string() + "' > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace arch_bench
