// compare_reports(): pair -> timing verdict + structural checks per pair -> unpaired rows explained -> the
// gate (SLOWER rows, structural regressions, REMOVED rows, a failed new report) -> summary and exit code.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "runner/diff/diff.hpp"
#include "runner/diff/load_report.hpp"
#include "runner/diff/unpaired_rows.hpp"
#include "runner/measure/statistics.hpp"

namespace arch_bench {

namespace {

// Older reports lack the field; a value that is not a boolean says nothing either.
bool git_tree_modified(const nlohmann::json& report) {
  const nlohmann::json::json_pointer pointer("/identity/git_tree_modified");
  return report.contains(pointer) && report.at(pointer).is_boolean() && report.at(pointer).get<bool>();
}

// "cpu, AMD EPYC" / "cuda, NVIDIA H100 (host AMD EPYC)": the machine, as a reader names it.
std::string hardware_of(const nlohmann::json& d) {
  const std::string backend = string_at(d, "/hardware/backend");
  const std::string cpu = string_at(d, "/hardware/host/cpu_model");
  std::vector<std::string> gpus;
  try {
    const nlohmann::json& gpu = d.at("hardware").at("gpu");
    for (const nlohmann::json& device : gpu.is_array() ? gpu : nlohmann::json::array({gpu})) {
      if (device.is_object() && device.contains("name") && device.at("name").is_string()) {
        gpus.push_back(device.at("name").get<std::string>());
      }
    }
  } catch (const nlohmann::json::exception&) {
  }
  const std::string machine = gpus.empty() ? (cpu.empty() ? "unknown CPU" : cpu)
                                           : fmt::format("{} (host {})", fmt::join(gpus, ", "),
                                                         cpu.empty() ? "unknown CPU" : cpu);
  return fmt::format("{}, {}", backend.empty() ? "unknown backend" : backend, machine);
}

// "interrupted: ..." for a report whose failure is set, "" for one whose failure is null.
std::string failure_of(const nlohmann::json& d) {
  const auto failure = d.find("failure");
  if (failure == d.end() || !failure->is_object()) return {};
  const std::string kind = failure->value("kind", std::string("failure"));
  const std::string message = failure->value("message", std::string());
  return message.empty() ? kind : kind + ": " + message;
}

ReportSide side_of(const LoadedReport& report) {
  const nlohmann::json& d = report.document;
  return {report.file,
          string_at(d, "/schema_version"),
          string_at(d, "/identity/workload_id"),
          string_at(d, "/identity/run_label"),
          string_at(d, "/identity/mode"),
          string_at(d, "/identity/created_at"),
          string_at(d, "/identity/git_commit"),
          string_at(d, "/evidence_level"),
          string_at(d, "/decision/verdict"),
          git_tree_modified(d),
          hardware_of(d),
          failure_of(d)};
}

std::vector<double> samples_of(const nlohmann::json& row) {
  std::vector<double> samples;
  if (const auto it = row.find("samples_ms"); it != row.end() && it->is_array()) {
    for (const nlohmann::json& value : *it) {
      if (value.is_number()) samples.push_back(value.get<double>());
    }
  }
  return samples;
}

std::optional<double> median_of(const nlohmann::json& row) {
  const std::vector<double> samples = samples_of(row);
  return samples.empty() ? std::nullopt : std::optional<double>(summarize(samples).median);
}

// Rows whose host_contention probes differ by more than this factor were measured on a core shared
// differently (an uncontended core reads ~1, a shared one ~1.5).
constexpr double kContentionDifference = 1.2;

// Rows that ran at half the run's read ceiling or more are bound by memory bandwidth: their time
// follows what the host's memory delivers, which drifts on a shared host (memory_probe.hpp).
constexpr double kMemoryBoundFraction = 0.5;
// Memory probes further apart than this factor saw two different bandwidths (on a steady host the
// median probe of a row repeats within ~2%).
constexpr double kMemoryDifference = 1.05;

std::optional<double> number_in(const nlohmann::json& row, const char* key) {
  const auto found = row.find(key);
  if (found == row.end() || !found->is_number()) return std::nullopt;
  return found->get<double>();
}

bool memory_bound(const nlohmann::json& row) {
  const std::optional<double> fraction = number_in(row, "fraction_of_memory_bandwidth");
  return fraction && *fraction >= kMemoryBoundFraction;
}

// A row whose team checks (runner/measure/team_check.hpp) found a worker missing after this much
// larger a share of its samples than the other row lost that share to the host.
constexpr double kStallShareDifference = 0.1;

struct TeamStalls {
  std::int64_t stalled = 0, samples = 0;
  double share() const { return static_cast<double>(stalled) / static_cast<double>(samples); }
};

std::optional<TeamStalls> team_stalls(const nlohmann::json& row) {
  const std::optional<double> stalled = number_in(row, "team_stalled_samples");
  const std::int64_t samples = static_cast<std::int64_t>(samples_of(row).size());
  if (!stalled || samples == 0) return std::nullopt;
  return TeamStalls{static_cast<std::int64_t>(*stalled), samples};
}

// A slower (or faster) row whose samples were followed by a missing worker markedly more (or less)
// often than the other row's measured the host's scheduling of the team, not the kernel: UNSURE.
void judge_team_stalls(RowDiff& row, const RowPair& pair) {
  if (row.timing.verdict != Verdict::slower && row.timing.verdict != Verdict::faster) return;
  const std::optional<TeamStalls> old_stalls = team_stalls(*pair.old_row), new_stalls = team_stalls(*pair.new_row);
  if (!old_stalls || !new_stalls) return;
  const bool slower = row.timing.verdict == Verdict::slower;
  const double excess = slower ? new_stalls->share() - old_stalls->share() : old_stalls->share() - new_stalls->share();
  if (excess < kStallShareDifference) return;
  row.timing.verdict = Verdict::unsure;
  row.timing.reason = fmt::format("{} by {:+.0f}%, but a worker thread did not answer after {} of {} vs {} of {} samples "
                                  "(team check): the host took its vCPU away, not necessarily the kernel's doing",
                                  slower ? "slower" : "faster", 100 * *row.timing.change, old_stalls->stalled,
                                  old_stalls->samples, new_stalls->stalled, new_stalls->samples);
}

// Rows whose team checks answered at markedly different speeds (the median of each row's checks,
// runner/measure/team_check.hpp). On the 2-vCPU VMs an empty parallel region takes either ~0.6 or
// ~1.2 us, in spells of seconds to minutes that come from the host (results/shared-host-probes.md, "Team latency"), and a
// step split over the team pays that difference two or three times (its fork and join, and the
// lines its threads hand each other); a serial step beside a spinning worker can slow in the
// same spells. A change in the checks' direction and no larger than
// kTeamLatencyMultiple times their difference is the host's: UNSURE. A larger change is not
// explained by it and keeps its verdict.
constexpr double kTeamLatencyDifference = 1.5;
constexpr double kTeamLatencyMultiple = 3.0;

void judge_team_latency(RowDiff& row, const RowPair& pair) {
  if (row.timing.verdict != Verdict::slower && row.timing.verdict != Verdict::faster) return;
  const std::optional<double> old_check = number_in(*pair.old_row, "team_check_median_us"),
                              new_check = number_in(*pair.new_row, "team_check_median_us");
  if (!old_check || !new_check || *old_check <= 0 || *new_check <= 0 || !row.timing.old_median_ms ||
      !row.timing.new_median_ms) {
    return;
  }
  const bool slower = row.timing.verdict == Verdict::slower;
  const double slow_check = slower ? *new_check : *old_check, fast_check = slower ? *old_check : *new_check;
  if (slow_check < kTeamLatencyDifference * fast_check) return;
  const double change_us = 1000 * std::fabs(*row.timing.new_median_ms - *row.timing.old_median_ms);
  if (change_us > kTeamLatencyMultiple * (slow_check - fast_check)) return;
  row.timing.verdict = Verdict::unsure;
  row.timing.reason = fmt::format("{} by {:+.0f}% ({:.2f} us), but the team answered its checks in {:.2f} vs {:.2f} us "
                                  "(median team check): the host ran the vCPUs differently (results/shared-host-probes.md, Team latency), "
                                  "not necessarily the kernel",
                                  slower ? "slower" : "faster", 100 * *row.timing.change, change_us, *old_check,
                                  *new_check);
}

// A timing change of two memory-bound rows measured under different host memory bandwidth is judged
// at equal bandwidth (time x probe rate, the bytes a row's time is worth): when that change is below
// the minimum effect, the host explains it and the verdict is UNSURE; otherwise the verdict stands and
// the reason gives the change at equal bandwidth too.
void judge_at_equal_bandwidth(RowDiff& row, const RowPair& pair, const DiffSettings& settings) {
  if (row.timing.verdict != Verdict::slower && row.timing.verdict != Verdict::faster) return;
  const std::optional<double> old_gbps = number_in(*pair.old_row, "host_memory_gbps"),
                              new_gbps = number_in(*pair.new_row, "host_memory_gbps");
  if (!old_gbps || !new_gbps || *old_gbps <= 0 || *new_gbps <= 0 || !row.timing.old_median_ms ||
      !row.timing.new_median_ms || *row.timing.old_median_ms <= 0) {
    return;
  }
  if (!memory_bound(*pair.old_row) || !memory_bound(*pair.new_row)) return;
  if (std::max(*old_gbps, *new_gbps) <= kMemoryDifference * std::min(*old_gbps, *new_gbps)) return;
  const double at_equal_bandwidth =
      (*row.timing.new_median_ms * *new_gbps) / (*row.timing.old_median_ms * *old_gbps) - 1.0;
  const std::string probes = fmt::format("the host's memory read {:.1f} vs {:.1f} GB/s (probe)", *old_gbps, *new_gbps);
  if (std::fabs(at_equal_bandwidth) < settings.timing.min_effect) {
    row.timing.reason = fmt::format("{} by {:+.0f}%, but {}; at equal bandwidth the change is {:+.1f}%: the machine "
                                    "changed, not necessarily the kernel",
                                    *row.timing.change > 0 ? "slower" : "faster", 100 * *row.timing.change, probes,
                                    100 * at_equal_bandwidth);
    row.timing.verdict = Verdict::unsure;
  } else {
    row.timing.reason += fmt::format("; {:+.0f}% at equal memory bandwidth ({})", 100 * at_equal_bandwidth, probes);
  }
}

// The contention probe (runner/measure/contention.hpp) reads how much slower the host made FMA-bound
// code. A slowdown measured on a core contended more than kContentionDifference times as much (or a
// speed-up on one contended that much less) is the host's, whatever its size: UNSURE. Closer probes
// that moved the change's way judge it at equal contention (time / probe; a step is slowed by at most
// about the probe's factor): when that change is below the minimum effect, or the probe more than
// accounts for the change, the host explains it and the verdict is UNSURE; otherwise the verdict
// stands and the reason gives the change at equal contention too. In back-to-back default
// landscapes on the 2-vCPU Zen 4 VM, 14 of 18 SLOWER or FASTER rows of three pairs were such (e.g.
// softmax_kv's prefill at L = 512 1.100x slower with the probe 1.150x higher). A change against the
// probes' direction is not explained by them.
void judge_contention(RowDiff& row, const RowPair& pair, const DiffSettings& settings) {
  if (row.timing.verdict != Verdict::slower && row.timing.verdict != Verdict::faster) return;
  const std::optional<double> old_contention = number_in(*pair.old_row, "host_contention"),
                              new_contention = number_in(*pair.new_row, "host_contention");
  if (!old_contention || !new_contention) return;
  const bool slower = row.timing.verdict == Verdict::slower;
  const double more = slower ? *new_contention : *old_contention, less = slower ? *old_contention : *new_contention;
  if (more > kContentionDifference * less) {
    row.timing.verdict = Verdict::unsure;
    row.timing.reason = fmt::format("{} by {:+.0f}%, but the host contended the core differently (probe {:.2f} vs "
                                    "{:.2f}): the machine changed, not necessarily the kernel",
                                    *row.timing.change > 0 ? "slower" : "faster", 100 * *row.timing.change,
                                    *old_contention, *new_contention);
    return;
  }
  if (*old_contention <= 0 || *new_contention <= 0 || !row.timing.old_median_ms || !row.timing.new_median_ms ||
      *row.timing.old_median_ms <= 0) {
    return;
  }
  const double time_ratio = *row.timing.new_median_ms / *row.timing.old_median_ms;
  const double probe_ratio = *new_contention / *old_contention;
  if ((time_ratio > 1.0) != (probe_ratio > 1.0) || probe_ratio == 1.0) return;  // the host moved the other way
  const double at_equal_contention = time_ratio / probe_ratio - 1.0;
  const bool time_slower = time_ratio > 1.0;
  const bool explained =
      std::fabs(at_equal_contention) < settings.timing.min_effect || (at_equal_contention > 0) != time_slower;
  const std::string probes = fmt::format("the host contended the core {:.2f} vs {:.2f} (probe)", *old_contention,
                                         *new_contention);
  if (explained) {
    row.timing.verdict = Verdict::unsure;
    row.timing.reason = fmt::format("{} by {:+.0f}%, but {}; at equal contention the change is {:+.1f}%: the machine "
                                    "changed, not necessarily the kernel",
                                    time_slower ? "slower" : "faster", 100 * *row.timing.change, probes,
                                    100 * at_equal_contention);
  } else {
    row.timing.reason += fmt::format("; {:+.0f}% at equal contention ({})", 100 * at_equal_contention, probes);
  }
}

RowDiff diff_pair(const RowPair& pair, const DiffSettings& settings) {
  RowDiff row;
  row.key = pair.key;
  if (pair.old_row) row.old_status = pair.old_row->value("status", "");
  if (pair.new_row) row.new_status = pair.new_row->value("status", "");
  if (!pair.new_row) {
    row.verdict = Verdict::removed;
    row.reason = "only in the old report";
    row.timing.old_median_ms = median_of(*pair.old_row);
    return row;
  }
  if (!pair.old_row) {
    row.verdict = Verdict::added;
    row.reason = "only in the new report";
    row.timing.new_median_ms = median_of(*pair.new_row);
    return row;
  }
  row.structural = row_structural_changes(*pair.old_row, *pair.new_row, settings.memory);
  row.timing = judge_timing(samples_of(*pair.old_row), samples_of(*pair.new_row), settings.timing);
  if (*row.old_status != "ok" || *row.new_status != "ok") {
    // The medians stay for the reader; a failed or skipped row's samples are not judged.
    row.timing.verdict = Verdict::unsure;
    row.timing.change.reset();
    row.timing.p_value.reset();
    // A status change is already a structural change of the row; the reason need not repeat it.
    row.timing.reason = *row.old_status == *row.new_status
                            ? fmt::format("not timed: status {} in both reports", *row.old_status)
                            : "not timed in both reports";
  }
  judge_contention(row, pair, settings);
  judge_team_stalls(row, pair);
  judge_team_latency(row, pair);
  judge_at_equal_bandwidth(row, pair, settings);
  row.verdict = row.timing.verdict;
  row.reason = row.timing.reason;
  return row;
}

DiffSummary summarize_diff(const DiffResult& diff) {
  DiffSummary summary;
  for (Verdict verdict : kAllVerdicts) summary.verdicts[verdict] = 0;
  double log_sum = 0;
  auto count = [&summary](const StructuralChange& change) {
    switch (change.kind) {
      case ChangeKind::regression: ++summary.structural_regressions; break;
      case ChangeKind::improvement: ++summary.structural_improvements; break;
      case ChangeKind::neutral: ++summary.structural_neutral; break;
    }
  };
  for (const RowDiff& row : diff.rows) {
    ++summary.verdicts[row.verdict];
    for (const StructuralChange& change : row.structural) count(change);
    if (row.old_status == "ok" && row.new_status == "ok" && row.timing.old_median_ms && row.timing.new_median_ms &&
        *row.timing.old_median_ms > 0 && *row.timing.new_median_ms > 0) {
      log_sum += std::log(*row.timing.new_median_ms / *row.timing.old_median_ms);
      ++summary.geomean_rows;
    }
  }
  for (const StructuralChange& change : diff.report_changes) count(change);
  if (summary.geomean_rows > 0) summary.geomean_ratio = std::exp(log_sum / summary.geomean_rows);

  const int slower = summary.verdicts[Verdict::slower];
  if (slower > 0 && diff.settings.fail_on_slower) {
    summary.failing.push_back(fmt::format("{} SLOWER row(s)", slower));
  }
  if (summary.structural_regressions > 0) {
    summary.failing.push_back(fmt::format("{} structural regression(s)", summary.structural_regressions));
  }
  // Rows that disappeared were not measured: a run that stopped early, a mechanism dropped from
  // the matrix. The gate cannot call that "no regression" unless told to (issue 42).
  const int removed = summary.verdicts[Verdict::removed];
  if (removed > 0) {
    (diff.settings.allow_removed ? summary.relaxed : summary.failing)
        .push_back(fmt::format("{} REMOVED row(s){}", removed,
                               diff.settings.allow_removed ? " not counted (--allow-removed)"
                                                           : " (in the old report only; --allow-removed accepts that)"));
  }
  if (!diff.new_report.failure.empty()) {
    (diff.settings.allow_failure ? summary.relaxed : summary.failing)
        .push_back(fmt::format("the new report failed ({}){}", diff.new_report.failure,
                               diff.settings.allow_failure ? ", not counted (--allow-failure)" : ""));
  }
  for (const StructuralChange& change : diff.report_changes) {
    if (change.field == "evidence_level" && change.allowed) {
      summary.relaxed.push_back(fmt::format("{} not counted (--allow-evidence-drop)", change.message));
    }
  }
  summary.exit_code = summary.failing.empty() ? 0 : 1;
  return summary;
}
}  // namespace

DiffResult compare_reports(const LoadedReport& old_report, const LoadedReport& new_report,
                           const DiffSettings& settings, std::vector<std::string> notes,
                           std::vector<AllowedDifference> allowed) {
  DiffResult diff;
  diff.allowed_differences = std::move(allowed);
  diff.old_report = side_of(old_report);
  diff.new_report = side_of(new_report);
  diff.settings = settings;
  diff.notes = std::move(notes);

  static const nlohmann::json kNoRows = nlohmann::json::array();
  auto rows_of = [](const nlohmann::json& document) -> const nlohmann::json& {
    try {
      const nlohmann::json& rows = document.at("metrics").at("rows");
      return rows.is_array() ? rows : kNoRows;
    } catch (const nlohmann::json::exception&) {
      return kNoRows;
    }
  };
  const std::vector<RowPair> pairs = pair_rows(rows_of(old_report.document), rows_of(new_report.document));
  std::vector<RowKey> keys;
  for (const RowPair& pair : pairs) {
    diff.rows.push_back(diff_pair(pair, settings));
    keys.push_back(pair.key);
  }
  const std::vector<std::string> labels = row_labels(keys);
  for (std::size_t i = 0; i < diff.rows.size(); ++i) diff.rows[i].label = labels[i];

  explain_unpaired_rows(diff.rows, diff.notes);

  diff.report_changes = report_structural_changes(old_report.document, new_report.document);
  for (StructuralChange& change : diff.report_changes) {
    // A weaker claim (gpu_measured -> cpu_measured, measured -> dry_run) fails unless allowed; allowed,
    // it still shows, as neutral, and the summary says it was let pass.
    if (change.field == "evidence_level" && change.kind == ChangeKind::regression && settings.allow_evidence_drop) {
      change.kind = ChangeKind::neutral;
      change.allowed = true;
    }
  }
  diff.summary = summarize_diff(diff);
  return diff;
}

}  // namespace arch_bench
