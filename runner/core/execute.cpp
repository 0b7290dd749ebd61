#include "runner/core/execute.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <optional>

#include <fmt/format.h>

#include "mechanisms/common/cpu_isa.hpp"
#include "runner/core/errors.hpp"
#include "runner/core/interrupt.hpp"
#include "runner/measure/sampler.hpp"
#include "runner/measure/statistics.hpp"
#include "runner/plugins/plugin_report.hpp"

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

// Prepare, first run + fp64 check, warmup + samples, launch overhead: everything one row holds.
void measure_row(Row& row, const PlannedCell& planned, const Workload& workload, Backend& backend,
                 const Ceilings& ceilings, const SampleProgress& report_progress) {
  auto prepared = planned.mechanism->prepare(planned.cell, workload.seed, backend);
  prepared->run();
  if (backend.name() == "cpu") {
    row.cpu_kernel_isa = prepared->cpu_kernel_isa();
    // Unstated: a built-in kernel runs what this build compiled; a plugin's build is its own.
    if (row.cpu_kernel_isa.empty() && plugin_json(planned.cell.mechanism).is_null()) {
      row.cpu_kernel_isa = build_target_kernel_isa();
    }
  }
  row.accuracy = prepared->check();
  if (!row.accuracy.output_finite) {
    // Timings of a cell whose outputs are NaN/inf say nothing about the mechanism: no samples, no
    // crossover or timing verdict from this row (the decision sees a failed row).
    fail_row(row, "non_finite_output",
             fmt::format("outputs are not finite (NaN or inf) on the first run; max_abs_error {}: the inputs are "
                         "out of the mechanism's range (e.g. --qk-scale {}) or the kernel is wrong",
                         row.accuracy.max_abs_error, planned.cell.options.qk_scale));
    return;
  }
  MeasuredSamples measured = measure_cell(*prepared, backend, workload.warmup, workload.repeats,
                                          workload.cache_state, report_progress, workload.timing);
  row.samples_ms = std::move(measured.samples_ms);
  row.allocations_during_timing = measured.allocations_during_timing;
  if (!measured.contention_ratios.empty()) row.host_contention = summarize(measured.contention_ratios).median;
  row.stats = summarize(row.samples_ms);
  attach_rates(row, ceilings);
  if (is_cuda_timing(workload.timing.method)) {
    row.launch_overhead_ms = measure_launch_overhead_ms(
        *prepared, backend, std::max(workload.timing.steps_per_sample, kLaunchOverheadMinSteps),
        std::min(workload.repeats, kLaunchOverheadMaxSamples));
  }
}
}  // namespace

std::vector<Row> execute_plan(const Plan& plan, const Workload& workload, Backend& backend,
                              const Ceilings& ceilings, const ProgressSink& progress) {
  std::vector<Row> rows;
  const std::size_t total = plan.cells.size();
  std::optional<std::string> device_lost;  // a sticky device error fails every later cell
  for (std::size_t index = 0; index < total; ++index) {
    const PlannedCell& planned = plan.cells[index];
    Row row = row_for(planned, workload, backend.name());
    const std::string name = cell_name(planned);
    if (device_lost) {
      fail_row(row, "device_lost", "not run: an earlier cell lost the device (" + *device_lost + ")");
      rows.push_back(std::move(row));
      continue;
    }
    if (interrupt_requested()) break;  // cells not started are simply absent from the report
    if (progress) progress(fmt::format("[{}/{}] {}: preparing", index + 1, total, name), true);
    Allocator& allocator = backend.allocator();
    allocator.reset_peak();
    row.device_free_before_bytes = backend.device_free_bytes();
    auto report_progress = [&](std::int64_t done, std::int64_t all) {
      if (progress) progress(fmt::format("[{}/{}] {}: {}/{} samples", index + 1, total, name, done, all), true);
    };
    try {
      measure_row(row, planned, workload, backend, ceilings, report_progress);
      if (progress && row.status == RowStatus::ok) {
        progress(fmt::format("[{}/{}] {}: median {:.4f} ms, max_rel_error {:.2e}", index + 1, total, name,
                             row.stats.median, row.accuracy.max_rel_error),
                 false);
      } else if (progress) {
        progress(fmt::format("[{}/{}] {}: FAILED ({}): {}", index + 1, total, name, row.failure_kind, row.reason),
                 false);
      }
    } catch (const CellFailure& failure) {
      // One failing cell does not lose the others: the row records why and the decision sees it.
      fail_row(row, failure.kind(), failure.what());
      if (failure.device_lost()) device_lost = failure.what();
      if (progress) progress(fmt::format("[{}/{}] {}: FAILED ({}): {}", index + 1, total, name, failure.kind(), failure.what()), false);
    } catch (const std::bad_alloc&) {
      fail_row(row, "out_of_memory",
               fmt::format("out of host memory (std::bad_alloc) preparing or running the cell; predicted peak {} bytes",
                           planned.predicted_peak_bytes));
      if (progress) progress(fmt::format("[{}/{}] {}: FAILED (out_of_memory)", index + 1, total, name), false);
    } catch (const std::exception& error) {
      fail_row(row, "mechanism_error", error.what());
      if (progress) progress(fmt::format("[{}/{}] {}: FAILED: {}", index + 1, total, name, error.what()), false);
    }
    row.peak_memory_bytes = allocator.peak_bytes();
    if (!device_lost) row.device_free_after_bytes = backend.device_free_bytes();
    const bool interrupted = row.failure_kind == "interrupted";
    rows.push_back(std::move(row));
    if (interrupted) break;
  }
  return rows;
}

}  // namespace arch_bench
