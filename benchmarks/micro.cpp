// arch-bench-micro: every registered mechanism's CPU decode step and prefill as Google Benchmark
// cases over the default workload matrix, so gbench's own tooling (filters, repetitions,
// --benchmark_format=json, compare.py) works on the kernels. Cells are prepared exactly as
// `arch-bench run` prepares them; this harness times them hot (gbench's model).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <vector>

#include "mechanisms/common/chunk_matmul.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"

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
          // Each mechanism with the options a landscape runs it with (performer: favor+, m = 256).
          cell.options = mechanism->arm_options(cell.options);
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

// The register-tiled product every chunkwise prefill is built from (linear_attention, retnet,
// gated_deltanet), alone at its chunk shapes: a change to the tile shows here as FLOP/s without the
// mechanism around it. C = A B (no accumulate, so the values stay finite over any iteration count).
void chunk_matmul_case(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k, MatmulShape shape) {
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n, 0.0f);
  for (auto _ : state) {
    chunk_matmul(m, n, k, a.data(), k, b.data(), n, c.data(), n, shape);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  // Useful flops only: with lower_c, the m (m + 1) / 2 entries on and below the diagonal (m == n).
  const double entries = shape.lower_c ? static_cast<double>(m * (m + 1) / 2) : static_cast<double>(m * n);
  state.counters["flops"] = benchmark::Counter(2.0 * entries * static_cast<double>(k), benchmark::Counter::kIsIterationInvariantRate);
}

void register_kernels() {
  benchmark::RegisterBenchmark("chunk_matmul/64x64x64", chunk_matmul_case, 64, 64, 64, MatmulShape{});
  benchmark::RegisterBenchmark("chunk_matmul/64x64x64/lower_c", chunk_matmul_case, 64, 64, 64,
                               MatmulShape{.lower_c = true});
}
}  // namespace

int main(int argc, char** argv) {
  register_all();
  register_kernels();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
