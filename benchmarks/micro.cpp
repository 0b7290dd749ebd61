// arch-bench-micro: every registered mechanism's CPU decode step and prefill as Google Benchmark
// cases over the default workload matrix, so gbench's own tooling (filters, repetitions,
// --benchmark_format=json, compare.py) works on the kernels. Cells are prepared exactly as
// `arch-bench run` prepares them; this harness times them hot (gbench's model).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "mechanisms/registry.hpp"
#include "runner/backends/cpu/cpu_backend.hpp"

namespace {
using namespace arch_bench;

void run_cell(benchmark::State& state, const Mechanism* mechanism, Cell cell) {
  CpuBackend backend;
  std::unique_ptr<PreparedCell> prepared;
  try {
    prepared = mechanism->prepare(cell, 0, backend);
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  for (auto _ : state) {
    prepared->run();
    benchmark::ClobberMemory();
  }
  const Cost cost = mechanism->cost(cell);
  state.SetBytesProcessed(static_cast<std::int64_t>(cost.bytes_moved * static_cast<double>(state.iterations())));
  state.counters["flops"] = benchmark::Counter(cost.flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["state_bytes"] = static_cast<double>(mechanism->state_bytes(cell));
}

void register_all() {
  for (const auto& mechanism : all_mechanisms()) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      for (std::int64_t length : {512, 2048, 8192}) {
        for (DType dtype : {DType::bfloat16, DType::float32}) {
          Cell cell;
          cell.mechanism = mechanism->info().id;
          cell.phase = phase;
          cell.sequence_length = length;
          cell.dtype = dtype;
          if (mechanism->unsupported(cell)) continue;
          const std::string name = fmt::format("{}/{}/L={}/{}", cell.mechanism, phase_name(phase), length,
                                               dtype_name(dtype));
          auto* bench = benchmark::RegisterBenchmark(name.c_str(), run_cell, mechanism.get(), cell);
          bench->Unit(benchmark::kMicrosecond)->UseRealTime();
          // A softmax prefill at 8192 takes seconds on a small CPU: one timed iteration is plenty.
          if (phase == Phase::prefill && length >= 8192) bench->Iterations(1);
        }
      }
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
