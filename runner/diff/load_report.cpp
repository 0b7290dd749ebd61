#include "runner/diff/load_report.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/diff/hardware_identity.hpp"
#include "runner/report/json_input.hpp"
#include "runner/report/report.hpp"
#include "runner/report/schema_validation.hpp"

namespace arch_bench {

namespace {
constexpr std::size_t kErrorsShown = 5;

std::string major_of(const std::string& version) { return version.substr(0, version.find('.')); }

// These run before validation, so a value can be megabytes long: messages quote only its start.
std::string clipped(const std::string& value) {
  constexpr std::size_t kQuoted = 100;
  return value.size() <= kQuoted ? value : value.substr(0, kQuoted) + "...";
}
}  // namespace

std::string string_at(const nlohmann::json& document, const char* pointer) {
  // Runs before validation, so any shape must be survivable: a missing or odd field reads as "".
  try {
    const nlohmann::json& value = document.at(nlohmann::json::json_pointer(pointer));
    return value.is_string() ? value.get<std::string>() : std::string();
  } catch (const nlohmann::json::exception&) {
    return {};
  }
}

LoadedReport read_report(const std::string& file) {
  // A regular file under the input cap, nested at most kMaxJsonDepth deep (row keying and printing
  // walk `options` recursively), numbers in range: runner/report/json_input.hpp.
  return LoadedReport{file, read_json_input(file, "result report")};
}

std::vector<AllowedDifference> check_comparable(const LoadedReport& old_report, const LoadedReport& new_report,
                                                const ComparisonAllowances& allowances) {
  struct Kind {
    const char* option;
    bool allowed;
    const char* refusal;  // what is refused, then why, for the message
    std::vector<AllowedDifference> differences;
  };
  Kind workload{"--allow-workload-change", allowances.workload_change,
                "refusing to compare different workloads: {}. Rows of different workloads are not comparable "
                "evidence",
                {}};
  Kind mode{"--allow-mode-change", allowances.mode_change,
            "refusing to compare reports of different modes: {}. Each mode measures its own experiment and decides "
            "by its own rule, so its rows and verdicts are not the other's",
            {}};
  Kind hardware{"--allow-hardware-change", allowances.hardware_change,
                "refusing to compare reports measured on different hardware: {}. A timing verdict across machines "
                "judges the machines, not the code",
                {}};
  auto add = [](Kind& kind, const std::string& field, const std::string& old_value, const std::string& new_value,
                const std::string& message) {
    kind.differences.push_back({field, old_value, new_value, message, kind.option});
  };

  // identity.<key>, where both reports state it and the two differ (a report that omits it is not refused).
  auto compare_identity = [&](Kind& kind, const std::string& key) {
    const std::string field = "identity." + key;
    const std::string old_value = string_at(old_report.document, ("/identity/" + key).c_str());
    const std::string new_value = string_at(new_report.document, ("/identity/" + key).c_str());
    if (old_value.empty() || new_value.empty() || old_value == new_value) return;
    add(kind, field, clipped(old_value), clipped(new_value),
        fmt::format("{} differs: '{}' in {} vs '{}' in {}", field, clipped(old_value), old_report.file,
                    clipped(new_value), new_report.file));
  };

  compare_identity(workload, "workload_id");
  const std::string old_version = string_at(old_report.document, "/schema_version");
  const std::string new_version = string_at(new_report.document, "/schema_version");
  if (!old_version.empty() && !new_version.empty() && major_of(old_version) != major_of(new_version)) {
    add(workload, "schema_version", clipped(old_version), clipped(new_version),
        fmt::format("schema_version major differs: {} in {} vs {} in {}", clipped(old_version), old_report.file,
                    clipped(new_version), new_report.file));
  }
  compare_identity(mode, "mode");
  for (HardwareDifference& difference :
       hardware_differences(old_report.document, old_report.file, new_report.document, new_report.file)) {
    add(hardware, difference.field, difference.first_value, difference.second_value, difference.message);
  }

  std::vector<AllowedDifference> allowed;
  std::vector<std::string> refusals;
  for (Kind* kind : {&workload, &mode, &hardware}) {
    if (kind->differences.empty()) continue;
    if (kind->allowed) {
      allowed.insert(allowed.end(), kind->differences.begin(), kind->differences.end());
      continue;
    }
    std::vector<std::string> messages;
    for (const AllowedDifference& difference : kind->differences) messages.push_back(difference.message);
    refusals.push_back(fmt::format(fmt::runtime(kind->refusal), fmt::join(messages, "; ")) +
                       fmt::format("; pass {} to diff them anyway", kind->option));
  }
  if (!refusals.empty()) throw UsageError(fmt::format("{}", fmt::join(refusals, ". Also ")));
  return allowed;
}

namespace {

// The part of a recorded wait policy that decides how the team waits: "GOMP_SPINCOUNT=4000" out of
// "bounded spin: ... (GOMP_SPINCOUNT=4000)", or the whole value ("active", "passive", "unset").
std::string wait_setting(const std::string& policy) {
  const std::size_t at = policy.find("GOMP_SPINCOUNT=");
  if (at == std::string::npos) return policy;
  const std::size_t end = policy.find_first_not_of("0123456789", at + 15);
  return policy.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Whether the report's samples of short CPU steps could run on one thread (workload.team_trial; a
// report older than the trial ran every sample on the team).
bool team_trial_of(const LoadedReport& report) {
  const nlohmann::json& workload = report.document.at("workload");
  const auto trial = workload.find("team_trial");
  return trial != workload.end() && trial->is_boolean() && trial->get<bool>();
}

}  // namespace

std::vector<std::string> environment_notes(const LoadedReport& old_report, const LoadedReport& new_report) {
  std::vector<std::string> notes;
  const std::string old_policy = string_at(old_report.document, "/workload/omp_wait_policy");
  const std::string new_policy = string_at(new_report.document, "/workload/omp_wait_policy");
  if (!old_policy.empty() && !new_policy.empty() && wait_setting(old_policy) != wait_setting(new_policy)) {
    notes.push_back(fmt::format("the OpenMP wait policy differs ('{}' vs '{}'): split steps of a few microseconds "
                                "can move with it, so read their verdicts with that in mind",
                                clipped(old_policy), clipped(new_policy)));
  }
  const bool old_trial = team_trial_of(old_report), new_trial = team_trial_of(new_report);
  if (old_trial != new_trial) {
    notes.push_back(fmt::format("the team trial differs ({} vs {}): with it, a short CPU step's samples run on one "
                                "thread where that was faster (rows' one_thread_samples), so split decode steps "
                                "can move with it",
                                old_trial ? "on" : "off or older than it", new_trial ? "on" : "off or older than it"));
  }
  return notes;
}

void validate_report(const LoadedReport& report) {
  const std::string version = string_at(report.document, "/schema_version");
  const std::string supported = major_of(kResultSchemaVersion);
  if (!version.empty() && major_of(version) != supported) {
    throw UsageError(fmt::format("{}: schema_version {} is not readable by this arch-bench, which reads result "
                                 "reports {}.x",
                                 report.file, clipped(version), supported));
  }
  std::vector<std::string> errors = schema_errors(report.document, "result");
  if (errors.empty()) return;
  // valijson adds "Failed to validate ..." for every enclosing object of a violation; the
  // violations themselves are what the user has to fix.
  std::vector<std::string> leaves;
  for (const std::string& error : errors) {
    if (error.find(": Failed to validate") == std::string::npos) leaves.push_back(error);
  }
  if (!leaves.empty()) errors = std::move(leaves);
  std::string message = fmt::format("{}: not a valid arch-bench result report (schemas/result.schema.json), {} "
                                    "problem(s):",
                                    report.file, errors.size());
  for (std::size_t i = 0; i < errors.size() && i < kErrorsShown; ++i) message += "\n  " + errors[i];
  if (errors.size() > kErrorsShown) message += fmt::format("\n  ... and {} more", errors.size() - kErrorsShown);
  throw UsageError(message);
}

}  // namespace arch_bench
