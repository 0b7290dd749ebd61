#include "runner/report/console_table.hpp"

#include <fmt/format.h>

namespace arch_bench {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

void print_run_table(std::FILE* out, const RunReport& report) {
  const std::string rounds =
      report.workload.rounds > 1 ? fmt::format(" | {} rounds", report.workload.rounds) : std::string();
  fmt::print(out, "\n{} | {} | {} {} | {} cache{} | backend {}\n", report.identity.mode, report.identity.run_label,
             dtype_name(report.workload.dtype), fmt::format("B={} H={} d={}", report.workload.batch,
                                                            report.workload.heads, report.workload.head_dim),
             cache_state_name(report.workload.cache_state), rounds, report.backend);
  if (report.ceilings) {
    fmt::print(out, "ceilings: memory read {:.1f} GB/s, triad {:.1f} GB/s, fp32 FMA {:.1f} GFLOP/s\n",
               report.ceilings->memory_read_gbps, report.ceilings->memory_triad_gbps, report.ceilings->peak_gflops);
  }
  fmt::print(out, "{:<28} {:>7} {:>7} {:>10} {:>10} {:>10} {:>7} {:>9} {:>8} {:>6} {:>9}  {}\n", "mechanism", "phase",
             "L", "state MiB", "median ms", "mean ms", "rel sd", "peak MiB", "GB/s", "%BW", "rel err", "status");
  for (const Row& row : report.rows) {
    std::string name = row.cell.mechanism + (row.variant.empty() ? "" : " [" + row.variant + "]");
    const bool ok = row.status == RowStatus::ok;
    std::string status = !ok ? row_status_name(row.status)
                         : row.within_tolerance() ? "ok"
                                                  : "out of tolerance";
    if (row.accuracy.approx_rel_l2_vs_softmax) {
      status += fmt::format(" (rel L2 vs softmax {:.3g})", *row.accuracy.approx_rel_l2_vs_softmax);
    }
    if (row.accuracy.nonpositive_denominators > 0) {
      status += fmt::format(" ({} denominators <= 0)", row.accuracy.nonpositive_denominators);
    }
    fmt::print(out, "{:<28} {:>7} {:>7} {:>10.4f} {:>10} {:>10} {:>7} {:>9.3f} {:>8} {:>6} {:>9.2e}  {}\n", name,
               phase_name(row.cell.phase), row.cell.sequence_length, row.state_bytes / kMiB,
               ok ? fmt::format("{:.4f}", row.stats.median) : "-", ok ? fmt::format("{:.4f}", row.stats.mean) : "-",
               ok ? fmt::format("{:.1f}%", 100 * row.stats.rel_stdev) : "-", row.peak_memory_bytes / kMiB,
               ok ? fmt::format("{:.1f}", row.achieved_gbps) : "-",
               ok ? fmt::format("{:.0f}%", 100 * row.fraction_of_memory_bandwidth) : "-",
               row.accuracy.max_rel_error, status);
  }
  fmt::print(out, "\ndecision: {}\n", report.decision.verdict);
  for (const std::string& reason : report.decision.reasons) fmt::print(out, "  - {}\n", reason);
  fmt::print(out, "crossover length: {}\n",
             report.decision.crossover_length ? std::to_string(*report.decision.crossover_length) : "none");
  if (!report.decision.next_action.empty()) fmt::print(out, "next: {}\n", report.decision.next_action);
  for (const std::string& note : report.notes) fmt::print(out, "note: {}\n", note);
}

}  // namespace arch_bench
