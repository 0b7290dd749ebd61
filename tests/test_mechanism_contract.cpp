// What every built-in mechanism promises the harness, asserted once for all of them: a new mechanism
// folder is held to it by registering itself, with no edit here. A mechanism's own test file keeps
// what is particular to it (its math, its kernels' forms, its exact state formula).
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "mechanisms/registry.hpp"
#include "tests/support/mechanism_fixtures.hpp"
#include "tests/support/prepared_cells.hpp"

namespace arch_bench {
namespace {

std::vector<std::string> builtin_mechanism_ids() {
  std::vector<std::string> ids;
  for (const std::unique_ptr<Mechanism>& mechanism : all_mechanisms()) {
    if (plugin_origin(mechanism->info().id) == nullptr) ids.push_back(mechanism->info().id);
  }
  return ids;
}

class MechanismContract : public ::testing::TestWithParam<std::string> {
 protected:
  const Mechanism& mechanism() const {
    const Mechanism* found = find_mechanism(GetParam());
    EXPECT_NE(found, nullptr);
    return *found;
  }
  Cell cell(std::int64_t heads, std::int64_t dim, std::int64_t length, DType dtype, Phase phase,
            std::int64_t batch) const {
    return testing::mechanism_cell(GetParam(), heads, dim, length, dtype, phase, batch);
  }
};

// A fixed state stops growing: it may fill up to a bound (a sliding window's W tokens) but is the same
// size at 2^20 and 2^22 tokens; a history (a KV cache) grows from one token to 8192. Neither ever
// shrinks as the context grows, and sizes past 2^63 are refused, never wrapped.
TEST_P(MechanismContract, StateBytesAreBoundedOrGrowWithTheHistoryAndNeverWrap) {
  const Mechanism& m = mechanism();
  const bool fixed = m.info().state_kind == StateKind::fixed_state;
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    for (DType dtype : {DType::float32, DType::bfloat16}) {
      const auto bytes_at = [&](std::int64_t length) { return m.state_bytes(cell(8, 64, length, dtype, phase, 2)); };
      const std::string where = fmt::format("{} {}", phase_name(phase), dtype_name(dtype));
      EXPECT_GT(bytes_at(1), 0) << where;
      std::int64_t previous = bytes_at(1);
      for (std::int64_t length : {512, 2048, 8192, 1 << 20, 1 << 22}) {
        EXPECT_GE(bytes_at(length), previous) << where << " L " << length;
        previous = bytes_at(length);
      }
      if (fixed) {
        EXPECT_EQ(bytes_at(1 << 22), bytes_at(1 << 20)) << where;
      } else {
        EXPECT_GT(bytes_at(8192), bytes_at(1)) << where;
      }
      Cell huge = cell(8, 64, 512, dtype, phase, 2);
      huge.batch = std::int64_t{1} << 55;
      EXPECT_THROW((void)m.state_bytes(huge), SizeOverflow) << where;
    }
  }
}

// The harness's prepared cell, in both phases and storage dtypes, on a shape off every vector width and
// chunk size: the rows its check compares are finite and within the dtype's tolerance of the fp64
// reference, it holds no more than its prediction, a measured run() allocates nothing, and it costs something.
TEST_P(MechanismContract, PreparedCellsPassTheirCheckWithinTheirPredictionAndRunAllocatesNothing) {
  const Mechanism& m = mechanism();
  CpuBackend backend;
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    for (DType dtype : {DType::float32, DType::bfloat16}) {
      const Cell c = cell(3, 40, 131, dtype, phase, 2);
      const std::string where = fmt::format("{} {}", phase_name(phase), dtype_name(dtype));
      ASSERT_FALSE(m.unsupported(c).has_value()) << where << ": " << m.unsupported(c).value_or("");
      const testing::PreparedRun run = testing::run_prepared(m, c, 42, backend);
      EXPECT_LE(run.prepared_bytes, m.predicted_peak_bytes(c)) << where;
      EXPECT_EQ(run.run_allocations, 0) << where;
      EXPECT_TRUE(run.accuracy.output_finite) << where;
      EXPECT_GT(run.accuracy.rows_checked, 0) << where;
      EXPECT_LT(run.accuracy.max_rel_error, dtype_tolerance(dtype)) << where;
      const Cost cost = m.cost(c);
      EXPECT_GT(cost.flops, 0) << where;
      EXPECT_GT(cost.bytes_moved, 0) << where;
    }
  }
}

// A long context: one decode step after 8192 tokens stays finite and within tolerance (the decays and
// normalisers of the recurrent forms, and the softmax over a long cache, do not overflow or vanish).
TEST_P(MechanismContract, DecodeAfter8192TokensIsFiniteAndWithinTolerance) {
  const Mechanism& m = mechanism();
  CpuBackend backend;
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    const Accuracy a = testing::run_prepared(m, cell(2, 64, 8192, dtype, Phase::decode, 1), 1, backend).accuracy;
    EXPECT_TRUE(a.output_finite) << dtype_name(dtype);
    EXPECT_LT(a.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBuiltin, MechanismContract, ::testing::ValuesIn(builtin_mechanism_ids()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace arch_bench
