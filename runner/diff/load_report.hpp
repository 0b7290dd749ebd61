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

// Two reports are comparable when they measured the same workload (identity.workload_id) and their
// schema_version majors agree. Otherwise throws a UsageError naming both values, unless
// `allow_workload_change`; then returns one note per allowed difference for the diff's output.
// Fields that are missing or not strings are left to validate_report.
std::vector<std::string> check_comparable(const LoadedReport& old_report, const LoadedReport& new_report,
                                          bool allow_workload_change);

// Differences of the measuring environment that do not make two reports incomparable but can move
// their times, one note each: the OpenMP wait policy (workload.omp_wait_policy, compared by its
// GOMP_SPINCOUNT or OMP_WAIT_POLICY, not by its reason) and the team trial (workload.team_trial,
// absent in older reports: off). Call after validation.
std::vector<std::string> environment_notes(const LoadedReport& old_report, const LoadedReport& new_report);

// Checks the document against schemas/result.schema.json (the first violations in the message).
void validate_report(const LoadedReport& report);

}  // namespace arch_bench
