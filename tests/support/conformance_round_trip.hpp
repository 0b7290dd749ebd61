#pragma once
// The conformance round trip every recurrent mechanism's CPU tests make: seeded inputs generated,
// then a conformance run on them, in fp32 and in bf16; it passes and writes its final state with
// the shape the mechanism's state has.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runner/conformance/npy_files.hpp"
#include "tests/support/prepared_cells.hpp"

namespace arch_bench::testing {

// Shape {batch 2, heads 2, 80 tokens, head_dim 16}; `state_file` (in the run's output folder) has
// `state_shape`.
inline void expect_conformance_round_trip(const std::string& mechanism, const std::string& state_file,
                                          const std::vector<std::int64_t>& state_shape) {
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    TempFolder folder;
    const ConformanceResult result = generate_and_run_conformance(mechanism, {2, 2, 80, 16}, dtype, folder);
    EXPECT_TRUE(result.passed) << result.manifest.dump(2);
    EXPECT_EQ(read_npy(folder.path() / "out" / state_file).shape, state_shape) << dtype_name(dtype);
  }
}

}  // namespace arch_bench::testing
