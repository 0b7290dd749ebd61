#include "runner/preflight/preflight_report.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "build_info.hpp"
#include "runner/report/report.hpp"
#include "runner/present/printable_text.hpp"

namespace arch_bench {

namespace {
std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::int64_t count(const PreflightResult& result, CheckStatus status) {
  return std::count_if(result.checks.begin(), result.checks.end(),
                       [status](const Check& c) { return c.status == status; });
}
}  // namespace

nlohmann::json to_json(const Check& check) {
  return {{"id", check.id},
          {"status", check_status_name(check.status)},
          {"message", check.message},
          {"measured", check.measured},
          {"required", check.required}};
}

nlohmann::json preflight_report_json(const Profile& profile, const Workload& workload, const PreflightResult& result,
                                     const std::string& command_line) {
  nlohmann::json phases = nlohmann::json::array();
  for (Phase phase : workload.phases) phases.push_back(phase_name(phase));
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& check : result.checks) checks.push_back(to_json(check));
  const auto& available = result.machine.host_available_bytes;
  return {{"schema_version", kPreflightSchemaVersion},
          {"created_at", utc_timestamp_now()},
          {"tool", "arch-bench"},
          {"tool_version", build_info::tool_version},
          {"git_commit", build_info::git_commit},
          {"build_type", build_info::build_type},
          {"command_line", command_line},
          {"profile",
           {{"id", profile.id},
            {"path", profile.path.string()},
            {"backend", profile.backend},
            {"evidence_level", profile.evidence_level}}},
          {"plan",
           {{"mode", result.plan_facts.mode},
            {"cells", result.plan_facts.cells},
            {"sequence_lengths", workload.sequence_lengths},
            {"batch", workload.batch},
            {"heads", workload.heads},
            {"head_dim", workload.head_dim},
            {"dtype", dtype_name(workload.dtype)},
            {"phases", phases},
            {"max_predicted_peak_bytes", result.plan_facts.max_predicted_peak_bytes},
            {"free_memory_margin", profile.device.free_memory_margin},
            {"required_free_bytes", result.required_free_bytes},
            {"mechanisms_without_backend", result.plan_facts.mechanisms_without_backend}}},
          {"machine",
           {{"host", result.machine.host},
            {"host_available_bytes", available ? nlohmann::json(*available) : nlohmann::json(nullptr)},
            {"cuda", to_json(result.machine.cuda)}}},
          {"checks", checks},
          {"counts",
           {{"pass", count(result, CheckStatus::pass)},
            {"warn", count(result, CheckStatus::warn)},
            {"fail", count(result, CheckStatus::fail)},
            {"skip", count(result, CheckStatus::skip)}}},
          {"passed", result.passed()}};
}

nlohmann::json profile_record_json(const Profile& profile, const PreflightResult& result) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& check : result.checks) checks.push_back(to_json(check));
  return {{"id", profile.id},
          {"path", profile.path.string()},
          {"backend", profile.backend},
          {"evidence_level", profile.evidence_level},
          {"measurement", profile.document.at("measurement")},
          {"decision_thresholds", profile.document.at("decision_thresholds")},
          {"preflight", {{"passed", result.passed()}, {"checks", checks}}}};
}

void print_preflight(std::FILE* out, const Profile& profile, const PreflightResult& result) {
  fmt::print(out, "preflight {} ({} backend, {}): mode {}, {} cells, largest predicted peak {}\n", profile.id,
             profile.backend, profile.path.string(), result.plan_facts.mode, result.plan_facts.cells,
             human_bytes(result.plan_facts.max_predicted_peak_bytes));
  for (const Check& check : result.checks) {
    fmt::print(out, "  {:<4}  {:<18}  {}\n", upper(check_status_name(check.status)), check.id,
               escape_control_bytes(check.message));
  }
  const std::int64_t failures = count(result, CheckStatus::fail);
  const std::int64_t warnings = count(result, CheckStatus::warn);
  if (failures == 0) {
    fmt::print(out, "preflight {}: PASS ({} warning{}); runs under it may produce {} evidence\n", profile.id,
               warnings, warnings == 1 ? "" : "s", profile.evidence_level);
  } else {
    fmt::print(out, "preflight {}: FAIL ({} failed check{}); a run under it stays dry_run and measures nothing\n",
               profile.id, failures, failures == 1 ? "" : "s");
  }
}

}  // namespace arch_bench
