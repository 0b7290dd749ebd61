#pragma once
// Reading the two reports of a diff and deciding whether they may be compared at all. Every
// problem is a UsageError (exit 2) that names the file and what is wrong with it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

struct LoadedReport {
  std::string file;  // as the user typed it, for messages
  nlohmann::json document;
};

// Reads and parses `file` with the bounds of runner/report/json_input.hpp (regular file, size cap,
// nesting depth, number range); does not validate it.
LoadedReport read_report(const std::string& file);

// The string at a JSON pointer, or "" when it is missing or not a string (safe on any document).
std::string string_at(const nlohmann::json& document, const char* pointer);

// A difference that makes two reports incomparable by default, and the option that allowed it.
struct AllowedDifference {
  std::string field;  // "identity.workload_id", "identity.mode", "hardware.host.cpu_model", ...
  std::string old_value, new_value;
  std::string message;     // names both values and both files
  std::string allowed_by;  // "--allow-hardware-change"
};

// Which refusals of check_comparable the user lifted, each with its own option.
struct ComparisonAllowances {
  bool workload_change = false;  // --allow-workload-change: identity.workload_id, schema_version major
  bool mode_change = false;      // --allow-mode-change: identity.mode (linear_recurrence vs performer, ...)
  bool hardware_change = false;  // --allow-hardware-change: backend, CPU model, GPU name (hardware_identity.hpp)
};

// Two reports are comparable when they measured the same workload (identity.workload_id) in the same
// mode (identity.mode) on the same hardware (backend, CPU model, GPU names), and their
// schema_version majors agree. Each difference not allowed is refused: a UsageError (exit 2) naming
// both values, both files and the option that would allow it. Returns the allowed differences, for
// the top of the diff's output. Fields that are missing or not strings are left to validate_report.
std::vector<AllowedDifference> check_comparable(const LoadedReport& old_report, const LoadedReport& new_report,
                                                const ComparisonAllowances& allowances);

// Differences of the measuring environment that do not make two reports incomparable but can move
// their times, one note each: the OpenMP wait policy (workload.omp_wait_policy, compared by its
// GOMP_SPINCOUNT or OMP_WAIT_POLICY, not by its reason) and the team trial (workload.team_trial,
// absent in older reports: off). Call after validation.
std::vector<std::string> environment_notes(const LoadedReport& old_report, const LoadedReport& new_report);

// Checks the document against schemas/result.schema.json (the first violations in the message).
void validate_report(const LoadedReport& report);

}  // namespace arch_bench
