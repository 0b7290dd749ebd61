#include "runner/core/execute.hpp"

#include <exception>

#include <fmt/format.h>

#include "runner/measure/sampler.hpp"
#include "runner/measure/statistics.hpp"

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

std::vector<Row> execute_plan(const Plan& plan, const Workload& workload, Backend& backend,
                              const Ceilings& ceilings, const ProgressSink& progress) {
  std::vector<Row> rows;
  const std::size_t total = plan.cells.size();
  for (std::size_t index = 0; index < total; ++index) {
    const PlannedCell& planned = plan.cells[index];
    Row row = row_for(planned, workload, backend.name());
    const std::string name = cell_name(planned);
    if (progress) progress(fmt::format("[{}/{}] {}: preparing", index + 1, total, name), true);
    Allocator& allocator = backend.allocator();
    allocator.reset_peak();
    try {
      auto prepared = planned.mechanism->prepare(planned.cell, workload.seed, backend);
      prepared->run();
      row.accuracy = prepared->check();
      auto report_progress = [&](std::int64_t done, std::int64_t all) {
        if (progress) progress(fmt::format("[{}/{}] {}: {}/{} samples", index + 1, total, name, done, all), true);
      };
      MeasuredSamples measured = measure_cell(*prepared, backend, workload.warmup, workload.repeats,
                                              workload.cache_state, report_progress);
      row.samples_ms = std::move(measured.samples_ms);
      row.allocations_during_timing = measured.allocations_during_timing;
      row.peak_memory_bytes = allocator.peak_bytes();
      row.stats = summarize(row.samples_ms);
      attach_rates(row, ceilings);
      if (progress) {
        progress(fmt::format("[{}/{}] {}: median {:.4f} ms, max_rel_error {:.2e}", index + 1, total, name,
                             row.stats.median, row.accuracy.max_rel_error),
                 false);
      }
    } catch (const std::exception& error) {
      // One failing cell does not lose the others: the row records why and the decision sees it.
      row.status = RowStatus::failed;
      row.reason = error.what();
      row.samples_ms.clear();
      row.peak_memory_bytes = allocator.peak_bytes();
      if (progress) progress(fmt::format("[{}/{}] {}: FAILED: {}", index + 1, total, name, error.what()), false);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace arch_bench
