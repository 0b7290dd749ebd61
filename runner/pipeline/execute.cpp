#include "runner/pipeline/execute.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <optional>

#include <fmt/format.h>

#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "core/errors.hpp"
#include "runner/pipeline/interrupt.hpp"
#include "runner/measure/sampler.hpp"
#include "runner/measure/statistics.hpp"
#include "runner/measure/team_check.hpp"
#include "runner/plugins/plugin_report.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

namespace {
Row row_for(const PlannedCell& planned, const Workload& workload, const std::string& backend) {
  Row row;
  row.cell = planned.cell;
  row.role = planned.arm.role;
  row.variant = planned.arm.variant;
  row.backend = backend;
  row.state_kind = planned.mechanism->info().state_kind;
  row.state_bytes = planned.state_bytes;
  row.predicted_peak_bytes = planned.predicted_peak_bytes;
  row.predicted_process_bytes = planned.predicted_process_bytes;
  row.warmup = workload.warmup;
  row.timing = workload.timing;
  row.tolerance = dtype_tolerance(planned.cell.dtype);
  row.cost = planned.mechanism->cost(planned.cell);
  return row;
}

std::string cell_name(const PlannedCell& planned) {
  std::string name = fmt::format("{} {} L={}", planned.cell.mechanism, phase_name(planned.cell.phase),
                                 planned.cell.sequence_length);
  if (!planned.arm.variant.empty()) name += " [" + planned.arm.variant + "]";
  return name;
}
}  // namespace

void attach_rates(Row& row, const Ceilings& ceilings) {
  if (row.stats.median <= 0) return;
  const double seconds = row.stats.median * 1e-3;
  row.achieved_gbps = row.cost.bytes_moved / seconds / 1e9;
  row.achieved_gflops = row.cost.flops / seconds / 1e9;
  if (ceilings.memory_read_gbps > 0) row.fraction_of_memory_bandwidth = row.achieved_gbps / ceilings.memory_read_gbps;
  if (ceilings.peak_gflops > 0) row.fraction_of_peak_flops = row.achieved_gflops / ceilings.peak_gflops;
}

namespace {
constexpr std::int64_t kLaunchOverheadMinSteps = 10;
constexpr std::int64_t kLaunchOverheadMaxSamples = 20;

void fail_row(Row& row, std::string kind, std::string reason) {
  row.status = RowStatus::failed;
  row.failure_kind = std::move(kind);
  row.reason = std::move(reason);
  row.samples_ms.clear();
  row.launch_overhead_ms.reset();
}

// The per-sample host probes of one row, over all its rounds.
struct HostProbes {
  std::vector<double> contention, memory_gbps, team_checks_us;
  // Of the visits whose team trial ran (team_trial.hpp): each trial's medians, microseconds.
  std::vector<double> trial_team_us, trial_one_thread_us;
};

// One visit of a cell in round `round` of workload.rounds: prepare, one untimed run, then in the
// first round the fp64 check (a cell with NaN/inf outputs fails and is not visited again), warmup
// and this round's share of the samples, appended to the row. The last round also measures the
// launch overhead (CUDA) while the cell is still prepared.
void visit_cell(Row& row, HostProbes& probes, const PlannedCell& planned, const Workload& workload,
                Backend& backend, std::int64_t round, const SampleProgress& report_progress) {
  auto prepared = planned.mechanism->prepare(planned.cell, workload.seed, backend);
  prepared->run();
  if (round == 0) {
    if (backend.name() == "cpu") {
      row.cpu_kernel_isa = prepared->cpu_kernel_isa();
      // Unstated: a built-in kernel runs the ISA variant dispatch chose; a plugin's build is its own.
      if (row.cpu_kernel_isa.empty() && plugin_json(planned.cell.mechanism).is_null()) {
        row.cpu_kernel_isa = kernel_variant_isa(dispatched_kernel_variant());
      }
    }
    if (const auto* named = dynamic_cast<const NamesGpuKernel*>(prepared.get())) row.gpu_kernel = named->gpu_kernel();
    row.accuracy = prepared->check();
    if (!row.accuracy.output_finite) {
      // Timings of a cell whose outputs are NaN/inf say nothing about the mechanism: no samples, no
      // crossover or timing verdict from this row (the decision sees a failed row).
      fail_row(row, "non_finite_output",
               fmt::format("outputs are not finite (NaN or inf) on the first run; max_abs_error {}: the inputs are "
                           "out of the mechanism's range (e.g. --qk-scale {}) or the kernel is wrong",
                           row.accuracy.max_abs_error, qk_scale_option().number(planned.cell.options)));
      return;
    }
  }
  const std::int64_t samples = samples_in_round(workload.repeats, workload.rounds, round);
  MeasuredSamples measured = measure_cell(*prepared, backend, workload.warmup, samples, workload.cache_state,
                                          report_progress, workload.timing, workload.team_trial);
  row.samples_ms.insert(row.samples_ms.end(), measured.samples_ms.begin(), measured.samples_ms.end());
  row.allocations_during_timing += measured.allocations_during_timing;
  if (measured.team_trial) {
    row.one_thread_samples = row.one_thread_samples.value_or(0) + measured.one_thread_samples;
    if (measured.team_trial->pairs > 0) {
      probes.trial_team_us.push_back(measured.team_trial->team_median_ms * 1e3);
      probes.trial_one_thread_us.push_back(measured.team_trial->one_thread_median_ms * 1e3);
    }
  }
  probes.contention.insert(probes.contention.end(), measured.contention_ratios.begin(),
                           measured.contention_ratios.end());
  probes.memory_gbps.insert(probes.memory_gbps.end(), measured.memory_gbps.begin(), measured.memory_gbps.end());
  probes.team_checks_us.insert(probes.team_checks_us.end(), measured.team_checks_us.begin(),
                               measured.team_checks_us.end());
  if (round + 1 == workload.rounds && is_cuda_timing(workload.timing.method)) {
    row.launch_overhead_ms = measure_launch_overhead_ms(
        *prepared, backend, std::max(workload.timing.steps_per_sample, kLaunchOverheadMinSteps),
        std::min(workload.repeats, kLaunchOverheadMaxSamples));
  }
}

// The statistics of every sample a row took, over all its rounds.
void finish_row(Row& row, const HostProbes& probes, const Ceilings& ceilings) {
  if (row.status != RowStatus::ok || row.samples_ms.empty()) return;
  if (!probes.contention.empty()) row.host_contention = summarize(probes.contention).median;
  if (!probes.memory_gbps.empty()) row.host_memory_gbps = summarize(probes.memory_gbps).median;
  if (!probes.team_checks_us.empty()) {
    row.team_stalled_samples = count_team_stalls(probes.team_checks_us);
    row.team_check_median_us = summarize(probes.team_checks_us).median;
  }
  if (!probes.trial_team_us.empty()) {
    row.trial_team_median_us = summarize(probes.trial_team_us).median;
    row.trial_one_thread_median_us = summarize(probes.trial_one_thread_us).median;
  }
  row.stats = summarize(row.samples_ms);
  attach_rates(row, ceilings);
}
}  // namespace

std::vector<Row> execute_plan(const Plan& plan, const Workload& workload, Backend& backend,
                              const Ceilings& ceilings, const ProgressSink& progress) {
  const std::size_t total = plan.cells.size();
  std::vector<Row> rows;
  rows.reserve(total);
  for (const PlannedCell& planned : plan.cells) rows.push_back(row_for(planned, workload, backend.name()));
  std::vector<HostProbes> probes(total);
  std::vector<bool> visited(total, false);
  std::optional<std::string> device_lost;  // a sticky device error fails every later visit
  bool interrupted = false;
  const std::int64_t rounds = workload.rounds;
  for (std::int64_t round = 0; round < rounds && !interrupted; ++round) {
    for (std::size_t index = 0; index < total; ++index) {
      const PlannedCell& planned = plan.cells[index];
      Row& row = rows[index];
      if (row.status != RowStatus::ok) continue;  // failed in an earlier round: not visited again
      const std::string name = cell_name(planned);
      const std::string where =
          rounds > 1 ? fmt::format("[{}/{}] round {}/{} {}", index + 1, total, round + 1, rounds, name)
                     : fmt::format("[{}/{}] {}", index + 1, total, name);
      if (!planned.skip_reason.empty()) {  // no memory for it (check_resources.hpp): a row saying so
        row.status = RowStatus::skipped;
        row.reason = planned.skip_reason;
        visited[index] = true;
        if (progress) progress(fmt::format("{}: skipped: {}", where, row.reason), false);
        continue;
      }
      if (device_lost) {
        fail_row(row, "device_lost", "not run: an earlier cell lost the device (" + *device_lost + ")");
        visited[index] = true;
        continue;
      }
      if (interrupt_requested()) {  // cells not started are absent from the report
        interrupted = true;
        break;
      }
      visited[index] = true;
      if (progress) progress(where + ": preparing", true);
      Allocator& allocator = backend.allocator();
      allocator.reset_peak();
      if (round == 0) row.device_free_before_bytes = backend.device_free_bytes();
      auto report_progress = [&](std::int64_t done, std::int64_t all) {
        if (progress) progress(fmt::format("{}: {}/{} samples", where, done, all), true);
      };
      try {
        visit_cell(row, probes[index], planned, workload, backend, round, report_progress);
        if (row.status != RowStatus::ok) {
          if (progress) progress(fmt::format("{}: FAILED ({}): {}", where, row.failure_kind, row.reason), false);
        } else if (progress && round + 1 == rounds) {
          finish_row(row, probes[index], ceilings);
          progress(fmt::format("[{}/{}] {}: median {:.4f} ms, max_rel_error {:.2e}", index + 1, total, name,
                               row.stats.median, row.accuracy.max_rel_error),
                   false);
        }
      } catch (const CellFailure& failure) {
        // One failing cell does not lose the others: the row records why and the decision sees it.
        fail_row(row, failure.kind(), failure.what());
        if (failure.device_lost()) device_lost = failure.what();
        if (progress) progress(fmt::format("{}: FAILED ({}): {}", where, failure.kind(), failure.what()), false);
      } catch (const std::bad_alloc&) {
        fail_row(row, "out_of_memory",
                 fmt::format("out of host memory (std::bad_alloc) preparing or running the cell; predicted peak {} "
                             "bytes of buffers, {} bytes for the process",
                             planned.predicted_peak_bytes, planned.predicted_process_bytes));
        if (progress) progress(fmt::format("{}: FAILED (out_of_memory)", where), false);
      } catch (const std::exception& error) {
        fail_row(row, "mechanism_error", error.what());
        if (progress) progress(fmt::format("{}: FAILED: {}", where, error.what()), false);
      }
      row.peak_memory_bytes = std::max(row.peak_memory_bytes, allocator.peak_bytes());
      if (!device_lost) row.device_free_after_bytes = backend.device_free_bytes();
      if (row.failure_kind == "interrupted") {
        interrupted = true;
        break;
      }
    }
  }
  std::vector<Row> measured;
  measured.reserve(total);
  for (std::size_t index = 0; index < total; ++index) {
    if (!visited[index]) continue;
    finish_row(rows[index], probes[index], ceilings);
    measured.push_back(std::move(rows[index]));
  }
  return measured;
}

}  // namespace arch_bench
