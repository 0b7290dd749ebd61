#include "runner/diff/structural_checks.hpp"

#include <cmath>
#include <optional>

#include <fmt/format.h>

namespace arch_bench {

namespace {
constexpr double kKiB = 1024.0;

nlohmann::json field_or_null(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() ? *it : nlohmann::json(nullptr);
}

std::string bytes_text(double bytes) {
  if (std::abs(bytes) >= kKiB * kKiB) return fmt::format("{:.3f} MiB", bytes / (kKiB * kKiB));
  if (std::abs(bytes) >= kKiB) return fmt::format("{:.1f} KiB", bytes / kKiB);
  return fmt::format("{:.0f} B", bytes);
}

ChangeKind kind_of_move(double old_rank, double new_rank) {
  return new_rank < old_rank ? ChangeKind::regression
         : new_rank > old_rank ? ChangeKind::improvement
                               : ChangeKind::neutral;
}

void check_flag(const nlohmann::json& old_row, const nlohmann::json& new_row, const char* field,
                const std::string& lost, const std::string& regained, std::vector<StructuralChange>& changes) {
  const nlohmann::json before = field_or_null(old_row, field);
  const nlohmann::json after = field_or_null(new_row, field);
  if (!before.is_boolean() || !after.is_boolean() || before == after) return;
  const bool lost_it = before.get<bool>();
  changes.push_back({field, before, after, lost_it ? ChangeKind::regression : ChangeKind::improvement,
                     lost_it ? lost : regained});
}

std::optional<int> evidence_rank(const std::string& level) {
  if (level == "dry_run") return 0;
  if (level == "cpu_measured") return 1;
  if (level == "gpu_measured") return 2;
  return std::nullopt;
}

std::optional<int> verdict_rank(const std::string& verdict) {
  if (verdict.starts_with("reject")) return 0;
  if (verdict == "inconclusive") return 1;
  if (verdict.starts_with("accept")) return 2;
  return std::nullopt;
}

std::string string_field(const nlohmann::json& object, const char* name) {
  const nlohmann::json value = field_or_null(object, name);
  return value.is_string() ? value.get<std::string>() : std::string();
}
}  // namespace

std::vector<StructuralChange> row_structural_changes(const nlohmann::json& old_row, const nlohmann::json& new_row,
                                                     const MemoryTolerance& memory) {
  std::vector<StructuralChange> changes;

  const std::string old_status = string_field(old_row, "status");
  const std::string new_status = string_field(new_row, "status");
  if (old_status != new_status) {
    const ChangeKind kind = old_status == "ok"   ? ChangeKind::regression
                            : new_status == "ok" ? ChangeKind::improvement
                                                 : ChangeKind::neutral;
    const nlohmann::json reason = field_or_null(new_row, "reason");
    changes.push_back({"status", old_status, new_status, kind,
                       fmt::format("status {} -> {}{}", old_status, new_status,
                                   reason.is_string() ? ": " + reason.get<std::string>() : std::string())});
  }

  const nlohmann::json old_state = field_or_null(old_row, "state_bytes");
  const nlohmann::json new_state = field_or_null(new_row, "state_bytes");
  if (old_state.is_number_integer() && new_state.is_number_integer() && old_state != new_state) {
    const auto before = old_state.get<std::int64_t>();
    const auto after = new_state.get<std::int64_t>();
    changes.push_back({"state_bytes", old_state, new_state,
                       after > before ? ChangeKind::regression : ChangeKind::improvement,
                       fmt::format("state bytes {} -> {} ({}): the mechanism keeps a different state for the "
                                   "same cell",
                                   before, after, after > before ? "grew" : "shrank")});
  }

  if (old_status != "ok" || new_status != "ok") return changes;

  const nlohmann::json old_peak = field_or_null(old_row, "peak_memory_bytes");
  const nlohmann::json new_peak = field_or_null(new_row, "peak_memory_bytes");
  if (old_peak.is_number_integer() && new_peak.is_number_integer()) {
    const double before = old_peak.get<double>();
    const double after = new_peak.get<double>();
    const double moved = after - before;
    if (std::abs(moved) > memory.fraction * before && std::abs(moved) > static_cast<double>(memory.bytes)) {
      changes.push_back(
          {"peak_memory_bytes", old_peak, new_peak, moved > 0 ? ChangeKind::regression : ChangeKind::improvement,
           fmt::format("peak memory {} -> {} ({:+.1f}%; tolerance {:.0f}% and {})", bytes_text(before),
                       bytes_text(after), before > 0 ? 100 * moved / before : 100.0, 100 * memory.fraction,
                       bytes_text(static_cast<double>(memory.bytes)))});
    }
  }

  check_flag(old_row, new_row, "output_finite", "outputs are no longer finite (NaN or Inf in the output)",
             "outputs are finite again", changes);
  const bool finiteness_lost = !changes.empty() && changes.back().field == "output_finite" &&
                               changes.back().kind == ChangeKind::regression;
  if (!finiteness_lost) {  // non-finite outputs are out of tolerance too; say it once
    const nlohmann::json error = field_or_null(new_row, "max_rel_error");
    const nlohmann::json tolerance = field_or_null(new_row, "tolerance");
    const std::string numbers = error.is_number() && tolerance.is_number()
                                    ? fmt::format(" (max_rel_error {:.3g} > tolerance {:.3g})", error.get<double>(),
                                                  tolerance.get<double>())
                                    : std::string();
    check_flag(old_row, new_row, "within_tolerance", "error against the fp64 reference is beyond the dtype "
                                                     "tolerance" + numbers,
               "error against the fp64 reference is within the dtype tolerance again", changes);
  }
  return changes;
}

std::vector<StructuralChange> report_structural_changes(const nlohmann::json& old_document,
                                                        const nlohmann::json& new_document) {
  std::vector<StructuralChange> changes;

  const std::string old_level = string_field(old_document, "evidence_level");
  const std::string new_level = string_field(new_document, "evidence_level");
  if (old_level != new_level) {
    const auto before = evidence_rank(old_level);
    const auto after = evidence_rank(new_level);
    const ChangeKind kind = before && after ? kind_of_move(*before, *after) : ChangeKind::regression;
    changes.push_back({"evidence_level", old_level, new_level, kind,
                       fmt::format("evidence level {} -> {}", old_level, new_level)});
  }

  const nlohmann::json old_decision = field_or_null(old_document, "decision");
  const nlohmann::json new_decision = field_or_null(new_document, "decision");
  const std::string old_verdict = old_decision.is_object() ? string_field(old_decision, "verdict") : "";
  const std::string new_verdict = new_decision.is_object() ? string_field(new_decision, "verdict") : "";
  if (old_verdict != new_verdict) {
    const auto before = verdict_rank(old_verdict);
    const auto after = verdict_rank(new_verdict);
    // A dry run decides nothing; its verdict changing is the evidence level changing, said above.
    const bool dry_run = old_level == "dry_run" || new_level == "dry_run";
    const ChangeKind kind = dry_run           ? ChangeKind::neutral
                            : before && after ? kind_of_move(*before, *after)
                                              : ChangeKind::regression;
    changes.push_back({"decision.verdict", old_verdict, new_verdict, kind,
                       fmt::format("decision {} -> {}{}", old_verdict, new_verdict,
                                   dry_run ? " (a dry run decides nothing)" : "")});
  }
  return changes;
}

}  // namespace arch_bench
