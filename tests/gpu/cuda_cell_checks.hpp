#pragma once
// What every mechanism's GPU tests check of a registered CUDA cell: prepared on the device, run once
// (the cell poisons its output with NaN first, and run() allocates nothing) and checked against the
// mechanism's fp64 reference. Written once here so that the per-mechanism files say only which
// cells they run.
#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "mechanisms/registry.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench::testing {

// Prepares `cell` (which the CUDA backend must support) with `seed`, runs it once and checks it into
// `accuracy`. A fatal failure ends only this function: call it inside ASSERT_NO_FATAL_FAILURE.
inline void run_cuda_cell_once(Backend& backend, const Cell& cell, Accuracy& accuracy, std::uint64_t seed = 11) {
  const Mechanism* mechanism = find_mechanism(cell.mechanism);
  ASSERT_NE(mechanism, nullptr) << cell.mechanism;
  ASSERT_FALSE(mechanism->unsupported_on(cell, "cuda"));
  auto prepared = mechanism->prepare(cell, seed, backend);
  const std::int64_t allocations = backend.allocator().allocation_count();
  prepared->run();
  EXPECT_EQ(backend.allocator().allocation_count(), allocations);  // run() allocates nothing
  backend.synchronize();
  accuracy = prepared->check();
}

// The output was finite (it was poisoned with NaN before the run) and within the dtype's tolerance.
inline void expect_within_fp64_reference(const Accuracy& accuracy, DType dtype, const std::string& where = "") {
  EXPECT_TRUE(accuracy.output_finite) << where;
  EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(dtype)) << where;
}

// run_cuda_cell_once, then within the reference on every one of `rows_checked` output rows.
inline void expect_cuda_cell_matches_fp64_reference(Backend& backend, const Cell& cell, std::int64_t rows_checked,
                                                    std::uint64_t seed = 11, const std::string& where = "") {
  Accuracy accuracy;
  ASSERT_NO_FATAL_FAILURE(run_cuda_cell_once(backend, cell, accuracy, seed));
  expect_within_fp64_reference(accuracy, cell.dtype, where);
  EXPECT_EQ(accuracy.rows_checked, rows_checked) << where;
}

// The lengths the chunkwise prefills' cell suites run: around the 64-token chunk, and long; and the
// suites' test names for them ("L65").
inline const auto kChunkBoundaryLengths = ::testing::Values<std::int64_t>(1, 63, 64, 65, 300, 1000);
inline std::string length_test_name(const ::testing::TestParamInfo<std::int64_t>& info) {
  return "L" + std::to_string(info.param);
}

// A cell beside the main grid (a wide or odd head): prepared with `seed`, run once, within the reference.
inline void expect_cell_matches_fp64_reference(Backend& backend, const Cell& cell, std::uint64_t seed,
                                               const std::string& where) {
  const Mechanism* mechanism = find_mechanism(cell.mechanism);
  ASSERT_NE(mechanism, nullptr) << cell.mechanism;
  auto prepared = mechanism->prepare(cell, seed, backend);
  prepared->run();
  expect_within_fp64_reference(prepared->check(), cell.dtype, where);
}

// `cell` (which the CUDA backend must support) prepared with `seed`, run once and within the
// reference on some rows; then run `repeats` more times, as a repeated sample is, and checked again:
// the same output (the same error), and no run allocated anything.
inline void expect_cuda_cell_matches_and_repeats(Backend& backend, const Cell& cell, std::uint64_t seed, int repeats) {
  const Mechanism* mechanism = find_mechanism(cell.mechanism);
  ASSERT_NE(mechanism, nullptr) << cell.mechanism;
  ASSERT_EQ(mechanism->unsupported_on(cell, "cuda"), std::nullopt);
  auto prepared = mechanism->prepare(cell, seed, backend);
  const std::int64_t allocations = backend.allocator().allocation_count();
  prepared->run();
  const Accuracy first = prepared->check();
  EXPECT_TRUE(first.output_finite);
  EXPECT_LT(first.max_rel_error, dtype_tolerance(cell.dtype));
  EXPECT_GT(first.rows_checked, 0);
  for (int r = 0; r < repeats; ++r) prepared->run();
  EXPECT_EQ(prepared->check().max_abs_error, first.max_abs_error);
  EXPECT_EQ(backend.allocator().allocation_count(), allocations);  // run() allocates nothing
}

}  // namespace arch_bench::testing
