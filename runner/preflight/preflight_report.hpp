#pragma once
// The two forms of a preflight result: lines for a person (one per check) and the JSON document
// of schemas/preflight.schema.json.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/pipeline/workload.hpp"
#include "runner/preflight/preflight.hpp"

namespace arch_bench {

inline constexpr const char* kPreflightSchemaVersion = "1.0.0";

nlohmann::json to_json(const Check& check);
nlohmann::json preflight_report_json(const Profile& profile, const Workload& workload, const PreflightResult& result,
                                     const std::string& command_line);
// The result report's "profile" record of a run made with --profile: where the profile came from,
// the settings and thresholds it brought, and its preflight outcome.
nlohmann::json profile_record_json(const Profile& profile, const PreflightResult& result);

// "PASS  backend             CPU backend built in (...)" per check, then a one-line verdict.
void print_preflight(std::FILE* out, const Profile& profile, const PreflightResult& result);

}  // namespace arch_bench
