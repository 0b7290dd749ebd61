#pragma once
// Running a mechanism as the harness does, for the tests that assert on the result: a prepared cell
// (what prepare() allocated, what run() allocated, the check's accuracy) and a conformance round
// trip (--generate, then a run on the generated files).
#include <cstdint>
#include <memory>
#include <string>

#include "mechanisms/registry.hpp"
#include "core/backends/cpu/cpu_backend.hpp"
#include "runner/conformance/conformance.hpp"
#include "tests/support/cli.hpp"

namespace arch_bench::testing {

struct PreparedRun {
  std::int64_t prepared_bytes = 0;   // tracked bytes held by the prepared cell
  std::int64_t run_allocations = 0;  // allocations made by one run() (a prepared cell makes none)
  Accuracy accuracy;
};

inline PreparedRun run_prepared(const Mechanism& mechanism, const Cell& cell, std::uint64_t seed,
                                CpuBackend& backend) {
  PreparedRun result;
  const std::int64_t before = backend.allocator().current_bytes();
  std::unique_ptr<PreparedCell> prepared = mechanism.prepare(cell, seed, backend);
  result.prepared_bytes = backend.allocator().current_bytes() - before;
  const std::int64_t allocations = backend.allocator().allocation_count();
  prepared->run();
  result.run_allocations = backend.allocator().allocation_count() - allocations;
  result.accuracy = prepared->check();
  return result;
}

// Seeded inputs of `shape` generated into folder/in (seed 7), then the conformance run on them into
// folder/out. The mechanism's options are the defaults with no feature map.
inline ConformanceResult generate_and_run_conformance(const std::string& mechanism, const ConformanceShape& shape,
                                                      DType dtype, const TempFolder& folder) {
  MechanismOptions options;
  generate_conformance_inputs({folder.path() / "in", mechanism, shape, options, 7, dtype});
  return run_conformance({mechanism, folder.path() / "in", folder.path() / "out", dtype, options, false});
}

}  // namespace arch_bench::testing
