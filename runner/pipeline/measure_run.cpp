#include "runner/pipeline/measure_run.hpp"

#include <chrono>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/backends/cuda/cuda_entry.hpp"
#include "core/backends/cuda/device_probe.hpp"
#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/kernel_variant.hpp"
#include "runner/measure/ceilings.hpp"
#include "runner/measure/fork_join.hpp"
#include "runner/measure/timer_overhead.hpp"

namespace arch_bench {

namespace {

// One reading of the CPU ceilings for the progress lines.
std::string cpu_ceilings_text(const Ceilings& c) {
  return fmt::format("read {:.1f} GB/s, triad {:.1f} GB/s, {:.1f} GFLOP/s", c.memory_read_gbps, c.memory_triad_gbps,
                     c.peak_gflops);
}

}  // namespace

double measure_plan(const Plan& plan, const Workload& workload, RunReport& report, const ProgressSink& progress) {
  const bool gpu = report.backend == "cuda";
  std::unique_ptr<Backend> backend;
  if (gpu) backend = make_cuda_backend(0);
  else backend = std::make_unique<CpuBackend>();
  progress(gpu ? std::string("measuring GPU ceilings (device copy bandwidth, cuBLAS bf16 GEMM) ...")
               : std::string("measuring machine ceilings (memory bandwidth, FMA throughput) ..."),
           false);
  const Ceilings ceilings = gpu ? measure_cuda_ceilings(*backend) : measure_ceilings(workload.threads);
  if (gpu) {
    progress(fmt::format("ceilings: device copy {:.1f} GB/s, bf16 GEMM {:.1f} TFLOP/s", ceilings.memory_read_gbps,
                         ceilings.peak_gflops / 1e3),
             false);
  } else {
    progress("ceilings: " + cpu_ceilings_text(ceilings), false);
  }
  report.ceilings = ceilings;
  report.timer_overhead_ms = measure_timer_overhead_ms(*backend);
  if (!gpu) {
    report.omp_fork_join_us = measure_omp_fork_join_us(workload.threads);
    report.cpu_isa = cpu_isa_name(cpu_isa());
    report.cpu_kernel_variant = kernel_variant_name(dispatched_kernel_variant());
  }
  report.host = backend->facts();
  if (gpu) {
    report.gpu = cuda_device_facts(*backend);
    report.evidence_level = "gpu_measured";
  }

  const auto cells_start = std::chrono::steady_clock::now();
  report.rows = execute_plan(plan, workload, *backend, ceilings, progress);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - cells_start).count();
}

void reread_ceilings(RunReport& report, const Workload& workload, bool interrupted, double cells_seconds,
                     const ProgressSink& progress) {
  if (!report.ceilings || !wants_second_ceiling_reading(report.backend == "cuda", interrupted, cells_seconds)) return;
  progress("measuring machine ceilings again, after the cells ...", false);
  const Ceilings after = measure_ceilings(workload.threads);
  report.ceilings = with_second_reading(*report.ceilings, after);
  for (Row& row : report.rows) attach_rates(row, *report.ceilings);
  progress("ceilings after the cells: " + cpu_ceilings_text(after) +
               "; the rows use the better of the two readings of each",
           false);
}

}  // namespace arch_bench
