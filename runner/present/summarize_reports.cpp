#include "runner/present/summarize_reports.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "runner/diff/pair_rows.hpp"
#include "runner/present/model_tables.hpp"
#include "runner/present/number_text.hpp"

namespace arch_bench {

namespace {
namespace t = present_text;
using nlohmann::json;

const json& at_or_null(const json& object, const char* key) {
  static const json null_value;
  if (!object.is_object()) return null_value;
  const auto found = object.find(key);
  return found == object.end() ? null_value : *found;
}

std::string integer_text(const json& value) {
  return value.is_number() ? fmt::format("{}", value.get<std::int64_t>()) : "-";
}

std::string mechanism_label(const json& row) {
  std::string label = t::text(row, "mechanism");
  const std::string variant = t::text(row, "variant");
  if (!variant.empty()) label += " [" + variant + "]";
  if (t::text(row, "role") == "baseline") label += " (baseline)";
  return label;
}

// Phases in the order the report's workload lists them, then any others its rows have.
std::vector<std::string> phases_of(const json& document) {
  std::vector<std::string> phases;
  for (const json& phase : at_or_null(at_or_null(document, "workload"), "phases")) {
    if (phase.is_string()) phases.push_back(phase.get<std::string>());
  }
  for (const json& row : document["metrics"]["rows"]) {
    const std::string phase = t::text(row, "phase");
    if (std::find(phases.begin(), phases.end(), phase) == phases.end()) phases.push_back(phase);
  }
  return phases;
}

std::string identity_line(const json& document) {
  const json& id = document["identity"];
  std::string commit = t::text(id, "git_commit").substr(0, 12);
  return fmt::format("{} · workload {} · profile {} · created {} · git {} · {} {} ({}) · seed {}",
                     t::text(id, "semantic_id"), t::text(id, "workload_id"), t::text(id, "profile_id"),
                     t::text(id, "created_at"), commit.empty() ? "unknown" : commit, t::text(id, "tool"),
                     t::text(id, "tool_version"), t::text(id, "build_type"), integer_text(at_or_null(id, "seed")));
}

std::string gpu_text(const json& gpu) {
  const json& device = gpu.is_array() && !gpu.empty() ? gpu.front() : gpu;
  if (!device.is_object()) return "";
  std::string text = t::text(device, "name");
  const std::string capability = t::text(device, "compute_capability");
  if (!capability.empty()) text += ", sm " + capability;
  if (const auto sms = t::number(device, "multiprocessors")) text += fmt::format(", {:.0f} SMs", *sms);
  if (const auto memory = t::number(device, "memory_bytes")) text += ", " + t::bytes(memory);
  const std::string driver = t::text(device, "driver_version");
  if (!driver.empty()) text += ", driver " + driver;
  if (gpu.is_array() && gpu.size() > 1) text += fmt::format(" (+{} more)", gpu.size() - 1);
  return text;
}

std::string hardware_line(const json& hardware) {
  const json& host = at_or_null(hardware, "host");
  std::string text = t::text(hardware, "backend");
  const json& gpu = at_or_null(hardware, "gpu");
  if (!gpu.is_null()) text += ": " + gpu_text(gpu) + "; host";
  text += " " + t::text(host, "cpu_model");
  if (const auto cores = t::number(host, "logical_cores")) text += fmt::format(", {:.0f} logical cores", *cores);
  if (const auto memory = t::number(host, "memory_bytes")) text += ", " + t::bytes(memory) + " memory";
  const std::string os = t::text(host, "os");
  if (!os.empty()) text += ", " + os;
  return text;
}

std::string ceilings_line(const json& ceilings) {
  if (!ceilings.is_object()) return "none (dry run)";
  auto rate = [](std::optional<double> value, const char* unit) {
    return value ? fmt::format("{:.4g} {}", *value, unit) : std::string("-");
  };
  std::string text = fmt::format("memory read {}, triad {}, peak {}",
                                 rate(t::number(ceilings, "memory_read_gbps"), "GB/s"),
                                 rate(t::number(ceilings, "memory_triad_gbps"), "GB/s"),
                                 rate(t::number(ceilings, "peak_gflops"), "GFLOP/s"));
  return text + " (measured in this run: " + t::text(ceilings, "method") + ")";
}

std::string workload_line(const json& workload) {
  std::vector<std::string> lengths;
  for (const json& length : at_or_null(workload, "sequence_lengths")) lengths.push_back(integer_text(length));
  const json& rounds = at_or_null(workload, "rounds");
  const std::string rounds_text =
      rounds.is_number_integer() && rounds.get<std::int64_t>() > 1 ? " in " + integer_text(rounds) + " rounds" : "";
  const json& trial = at_or_null(workload, "team_trial");
  const std::string trial_text = trial.is_boolean() && trial.get<bool>() ? " (team trial: short steps may run on one)" : "";
  return fmt::format("L = {} · batch {} · heads {} · head_dim {} · {} · warmup {}, repeats {}{} · cache {} · {} threads{}",
                     fmt::join(lengths, ", "), integer_text(at_or_null(workload, "batch")),
                     integer_text(at_or_null(workload, "heads")), integer_text(at_or_null(workload, "head_dim")),
                     t::text(workload, "dtype"), integer_text(at_or_null(workload, "warmup")),
                     integer_text(at_or_null(workload, "repeats")), rounds_text, t::text(workload, "cache_state"),
                     integer_text(at_or_null(workload, "threads")), trial_text);
}

// "decode: L = 512, prefill: L = 512" from details.crossover_length, or the top-level length.
std::string crossover_line(const json& decision) {
  const json& per_phase = at_or_null(at_or_null(decision, "details"), "crossover_length");
  std::vector<std::string> parts;
  if (per_phase.is_object()) {
    for (const auto& [phase, length] : per_phase.items()) {
      parts.push_back(length.is_number() ? fmt::format("{}: L = {}", phase, integer_text(length))
                                         : fmt::format("{}: none", phase));
    }
  }
  if (!parts.empty()) return fmt::format("{} (the shortest measured length from which the candidate is faster)",
                                         fmt::join(parts, ", "));
  // The landscape: one crossover per candidate and phase.
  const json& candidates = at_or_null(at_or_null(decision, "details"), "candidates");
  if (candidates.is_object()) {
    for (const auto& [mechanism, candidate] : candidates.items()) {
      std::vector<std::string> phases;
      for (const auto& [phase, length] : at_or_null(candidate, "crossover_length").items()) {
        phases.push_back(fmt::format("{} {}", phase, length.is_number() ? integer_text(length) : "none"));
      }
      if (!phases.empty()) parts.push_back(fmt::format("{} ({})", mechanism, fmt::join(phases, ", ")));
    }
    if (!parts.empty()) return "per candidate, L from which it is faster: " + fmt::format("{}", fmt::join(parts, "; "));
  }
  const json& length = at_or_null(decision, "crossover_length");
  return length.is_number() ? fmt::format("L = {}", integer_text(length)) : "none reported";
}

// The dimensions a phase's rows do not share get a column each; the rest are in the workload line.
// A GPU row names the kernel that ran (gpu_kernel); the column appears when any row has one.
struct VaryingColumns {
  bool batch = false, heads = false, head_dim = false, dtype = false, approximation = false, kernel = false;
};

VaryingColumns varying_columns(const std::vector<const json*>& rows) {
  std::set<std::string> batch, heads, head_dim, dtype;
  VaryingColumns columns;
  for (const json* row : rows) {
    batch.insert(at_or_null(*row, "batch").dump());
    heads.insert(at_or_null(*row, "heads").dump());
    head_dim.insert(at_or_null(*row, "head_dim").dump());
    dtype.insert(t::text(*row, "dtype"));
    columns.approximation = columns.approximation || t::number(*row, "approx_rel_l2_vs_softmax").has_value();
    columns.kernel = columns.kernel || !t::text(*row, "gpu_kernel").empty();
  }
  columns.batch = batch.size() > 1;
  columns.heads = heads.size() > 1;
  columns.head_dim = head_dim.size() > 1;
  columns.dtype = dtype.size() > 1;
  return columns;
}

std::string status_text(const json& row) {
  const std::string status = t::text(row, "status");
  const std::string reason = t::text(row, "reason");
  if (status == "ok" || reason.empty()) return status;
  constexpr std::size_t kShown = 80;
  return status + ": " + (reason.size() > kShown ? reason.substr(0, kShown) + "..." : reason);
}

std::string error_text(const json& row) {
  std::string text = t::scientific(t::number(row, "max_rel_error"));
  const json& within = at_or_null(row, "within_tolerance");
  if (within.is_boolean() && !within.get<bool>()) text += " (over tolerance)";
  const json& finite = at_or_null(row, "output_finite");
  if (finite.is_boolean() && !finite.get<bool>()) text += " (non-finite)";
  return text;
}

Table phase_table(const std::string& phase, const std::vector<const json*>& rows) {
  const VaryingColumns varying = varying_columns(rows);
  Table table;
  table.caption = phase;
  auto column = [&table](const char* name, bool numeric) {
    table.header.push_back(name);
    table.numeric.push_back(numeric);
  };
  column("mechanism", false);
  column("L", true);
  if (varying.batch) column("batch", true);
  if (varying.heads) column("heads", true);
  if (varying.head_dim) column("head_dim", true);
  if (varying.dtype) column("dtype", false);
  column("median ms", true);
  column("p05–p95 ms", true);
  column("state", true);
  column("peak", true);
  column("% of bandwidth", true);
  // Prefill is compute-bound on a GPU (and often on a CPU): its rate against the run's measured FLOP
  // ceiling says more than its share of the copy bandwidth.
  const bool flop_rate = phase == "prefill";
  if (flop_rate) column("% of peak FLOP/s", true);
  if (varying.kernel) column("kernel", false);
  column("max rel error", true);
  if (varying.approximation) column("rel L2 vs softmax", true);
  column("status", false);
  for (const json* row : rows) {
    std::vector<std::string> cells{mechanism_label(*row), integer_text(at_or_null(*row, "sequence_length"))};
    if (varying.batch) cells.push_back(integer_text(at_or_null(*row, "batch")));
    if (varying.heads) cells.push_back(integer_text(at_or_null(*row, "heads")));
    if (varying.head_dim) cells.push_back(integer_text(at_or_null(*row, "head_dim")));
    if (varying.dtype) cells.push_back(t::text(*row, "dtype"));
    cells.push_back(t::milliseconds(t::number(*row, "median_step_ms")));
    cells.push_back(t::band(t::number(*row, "p05_step_ms"), t::number(*row, "p95_step_ms")));
    cells.push_back(t::bytes(t::number(*row, "state_bytes")));
    cells.push_back(t::bytes(t::number(*row, "peak_memory_bytes")));
    cells.push_back(t::percent(t::number(*row, "fraction_of_memory_bandwidth")));
    if (flop_rate) cells.push_back(t::percent(t::number(*row, "fraction_of_peak_flops")));
    if (varying.kernel) cells.push_back(t::text(*row, "gpu_kernel"));
    cells.push_back(error_text(*row));
    if (varying.approximation) cells.push_back(t::scientific(t::number(*row, "approx_rel_l2_vs_softmax")));
    cells.push_back(status_text(*row));
    table.rows.push_back(std::move(cells));
  }
  return table;
}

// The landscape's ranking (decision.details.ranking.<phase>.fastest_first), when present.
std::vector<Table> ranking_tables(const json& decision) {
  std::vector<Table> tables;
  const json& ranking = at_or_null(at_or_null(decision, "details"), "ranking");
  if (!ranking.is_object()) return tables;
  for (const auto& [phase, entry] : ranking.items()) {
    const json& fastest = at_or_null(entry, "fastest_first");
    if (!fastest.is_array() || fastest.empty()) continue;
    Table table;
    table.caption = "ranking, " + phase + " (at the longest length)";
    table.header = {"rank", "mechanism", "median ms", "time vs baseline", "state", "capacity n (cosine ≥ 0.9)",
                    "max rel error"};
    table.numeric = {true, false, true, true, true, true, true};
    int rank = 0;
    for (const json& arm : fastest) {
      const json& capacity = at_or_null(arm, "capacity_largest_n_cosine_0_9");
      const std::string variant = t::text(arm, "variant");
      table.rows.push_back({std::to_string(++rank), t::text(arm, "mechanism") + (variant.empty() ? "" : " [" + variant + "]"),
                            t::milliseconds(t::number(arm, "median_step_ms")),
                            t::ratio(t::number(arm, "time_ratio_to_baseline")),
                            t::bytes(t::number(arm, "state_bytes")),
                            capacity.is_number() ? integer_text(capacity) : "< smallest n",
                            t::scientific(t::number(arm, "max_rel_error"))});
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

std::string report_label(const LoadedReport& report) {
  return t::text(report.document["identity"], "run_label");
}

Section report_section(const LoadedReport& report, const std::vector<Chart>& charts) {
  const json& document = report.document;
  const json& decision = document["decision"];
  Section section;
  section.heading = fmt::format("{} · run {}", t::text(document["identity"], "mode"), report_label(report));
  section.facts.push_back({"report", report.file});
  section.facts.push_back({"identity", identity_line(document)});
  section.facts.push_back({"evidence", t::text(document, "evidence_level")});
  section.facts.push_back({"hardware", hardware_line(document["hardware"])});
  section.facts.push_back({"ceilings", ceilings_line(at_or_null(document["hardware"], "ceilings"))});
  section.facts.push_back({"workload", workload_line(document["workload"])});
  section.facts.push_back({"decision", t::text(decision, "verdict")});
  section.facts.push_back({"crossover", crossover_line(decision)});
  section.facts.push_back({"next action", t::text(decision, "next_action")});
  const json& failure = at_or_null(document, "failure");
  if (failure.is_object()) {
    section.facts.push_back({"failure", t::text(failure, "kind") + ": " + t::text(failure, "message")});
  }
  for (const json& reason : at_or_null(decision, "reasons")) {
    if (reason.is_string()) section.bullets.push_back("reason: " + reason.get<std::string>());
  }
  for (const json& note : at_or_null(document, "notes")) {
    if (note.is_string()) section.bullets.push_back("note: " + note.get<std::string>());
  }
  for (const std::string& phase : phases_of(document)) {
    std::vector<const json*> rows;
    for (const json& row : document["metrics"]["rows"]) {
      if (t::text(row, "phase") == phase) rows.push_back(&row);
    }
    // Grouped by arm (in the order the report first lists them), lengths ascending within: a reader
    // follows one mechanism down the lengths.
    std::vector<std::string> arms;
    for (const json* row : rows) {
      if (std::find(arms.begin(), arms.end(), mechanism_label(*row)) == arms.end()) arms.push_back(mechanism_label(*row));
    }
    auto arm_index = [&arms](const json* row) {
      return std::find(arms.begin(), arms.end(), mechanism_label(*row)) - arms.begin();
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const json* a, const json* b) {
      if (arm_index(a) != arm_index(b)) return arm_index(a) < arm_index(b);
      return at_or_null(*a, "sequence_length").get<std::int64_t>() < at_or_null(*b, "sequence_length").get<std::int64_t>();
    });
    if (!rows.empty()) section.tables.push_back(phase_table(phase, rows));
  }
  for (Table& table : ranking_tables(decision)) section.tables.push_back(std::move(table));
  add_model_presentation(document, section);
  for (const Chart& chart : charts) {
    if (chart.report_file == report.file) section.charts.push_back(chart);
  }
  return section;
}

// Column names for several reports: their run labels, made unique with the file name.
std::vector<std::string> unique_labels(const std::vector<LoadedReport>& reports) {
  std::vector<std::string> labels;
  std::map<std::string, int> count;
  for (const LoadedReport& report : reports) ++count[report_label(report)];
  for (const LoadedReport& report : reports) {
    const std::string label = report_label(report);
    labels.push_back(count[label] > 1 ? label + " (" + std::filesystem::path(report.file).filename().string() + ")"
                                      : label);
  }
  return labels;
}

// One table per phase: a row per cell (mechanism, variant, L, batch, heads, head_dim, dtype,
// options) in any report, each report's median and p05-p95, and each report's median over the first's.
Section side_by_side(const std::vector<LoadedReport>& reports) {
  const std::vector<std::string> labels = unique_labels(reports);
  Section section;
  section.heading = "side by side";
  for (std::size_t i = 0; i < reports.size(); ++i) section.facts.push_back({labels[i], reports[i].file});
  section.bullets.push_back(fmt::format(
      "ratios are each report's median step time over {}'s; cells missing from a report show -", labels.front()));

  // Cells in order of first appearance, per phase.
  std::vector<std::string> phases;
  std::map<std::string, std::vector<RowKey>> keys_by_phase;
  std::map<std::string, std::vector<const json*>> rows_by_key;  // key id -> row per report (nullptr: absent)
  for (std::size_t r = 0; r < reports.size(); ++r) {
    std::map<std::string, int> seen;
    for (const json& row : reports[r].document["metrics"]["rows"]) {
      const RowKey probe = row_key(row);
      const RowKey key = row_key(row, seen[probe.id()]++);
      auto& slots = rows_by_key[key.id()];
      if (slots.empty()) {
        slots.assign(reports.size(), nullptr);
        if (std::find(phases.begin(), phases.end(), key.phase) == phases.end()) phases.push_back(key.phase);
        keys_by_phase[key.phase].push_back(key);
      }
      slots[r] = &row;
    }
  }
  for (const std::string& phase : phases) {
    const std::vector<RowKey>& keys = keys_by_phase[phase];
    const std::vector<std::string> cell_labels = row_labels(keys);
    Table table;
    table.caption = "side by side, " + phase;
    table.header.push_back("cell");
    table.numeric.push_back(false);
    for (const std::string& label : labels) {
      table.header.push_back(label + " median ms (p05–p95)");
      table.numeric.push_back(true);
    }
    for (std::size_t r = 1; r < reports.size(); ++r) {
      table.header.push_back(labels[r] + " / " + labels.front());
      table.numeric.push_back(true);
    }
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const std::vector<const json*>& slots = rows_by_key[keys[k].id()];
      std::vector<std::string> cells{cell_labels[k]};
      for (const json* row : slots) {
        cells.push_back(row == nullptr ? "-"
                                       : t::milliseconds(t::number(*row, "median_step_ms")) + " (" +
                                             t::band(t::number(*row, "p05_step_ms"), t::number(*row, "p95_step_ms")) +
                                             ")");
      }
      // NaN for a missing median (plain doubles: GCC 12 warns falsely on optionals here).
      auto median_of = [](const json* row) {
        return row == nullptr ? std::nan("") : t::number(*row, "median_step_ms").value_or(std::nan(""));
      };
      const double first = median_of(slots.front());
      for (std::size_t r = 1; r < slots.size(); ++r) {
        const double ratio = median_of(slots[r]) / first;
        cells.push_back(first > 0 && std::isfinite(ratio) ? t::ratio(ratio) : "-");
      }
      table.rows.push_back(std::move(cells));
    }
    section.tables.push_back(std::move(table));
  }
  return section;
}
}  // namespace

Presentation summarize_reports(const std::vector<LoadedReport>& reports, const std::vector<Chart>& charts) {
  Presentation presentation;
  if (reports.size() == 1) {
    presentation.title = "arch-bench report: " + report_label(reports.front());
  } else {
    const std::vector<std::string> labels = unique_labels(reports);
    presentation.title = fmt::format("arch-bench report: {}", fmt::join(labels, ", "));
  }
  if (reports.size() > 1) presentation.sections.push_back(side_by_side(reports));
  for (const LoadedReport& report : reports) presentation.sections.push_back(report_section(report, charts));
  return presentation;
}

}  // namespace arch_bench
