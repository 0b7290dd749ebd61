// The per-head checks against the fp64 reference (mechanisms/common/check_heads.hpp) run their heads
// on the OpenMP team: the merged measures must be the serial ones, every head checked once, whatever
// the team, and a stop request must still end the check with CellFailure.
#include <omp.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/stop_request.hpp"
#include "mechanisms/common/check_heads.hpp"

namespace arch_bench {
namespace {

constexpr std::int64_t kHeads = 37, kTokens = 5, kWidth = 3;

// The tests set the team size; the binary's other tests get the one they started with back.
struct TeamSize {
  explicit TeamSize(int threads) { omp_set_num_threads(threads); }
  ~TeamSize() { omp_set_num_threads(before); }
  int before = omp_get_max_threads();
};

// Reference row (bh, t): a value per column; the output differs from it by bh-dependent amounts, so
// the largest error and the largest reference sit in different heads.
double reference_value(std::int64_t bh, std::int64_t t, std::int64_t c) { return 0.5 + bh * 0.01 + t * 0.1 + c; }

MatrixD reference_for(std::int64_t bh, std::int64_t rows) {
  MatrixD m(rows, kWidth);
  for (std::int64_t t = 0; t < rows; ++t) {
    for (std::int64_t c = 0; c < kWidth; ++c) m(t, c) = reference_value(bh, t, c);
  }
  return m;
}

std::vector<float> outputs_off_by(double (*error)(std::int64_t bh)) {
  std::vector<float> out(kHeads * kTokens * kWidth);
  for (std::int64_t bh = 0; bh < kHeads; ++bh) {
    for (std::int64_t t = 0; t < kTokens; ++t) {
      for (std::int64_t c = 0; c < kWidth; ++c) {
        out[(bh * kTokens + t) * kWidth + c] = static_cast<float>(reference_value(bh, t, c) + error(bh));
      }
    }
  }
  return out;
}

Accuracy serial_prefill_check(const std::vector<float>& out) {
  ErrorAccumulator errors;
  for (std::int64_t bh = 0; bh < kHeads; ++bh) {
    const MatrixD ref = reference_for(bh, kTokens);
    for (std::int64_t t = 0; t < kTokens; ++t) errors.add_row(out.data() + (bh * kTokens + t) * kWidth, ref.row(t), kWidth);
  }
  return errors.finish();
}

TEST(CheckHeads, ParallelPrefillCheckIsTheSerialOneAndVisitsEveryHeadOnce) {
  const std::vector<float> out = outputs_off_by([](std::int64_t bh) { return bh == 23 ? 0.25 : 1e-3 * (bh % 5); });
  const Accuracy serial = serial_prefill_check(out);
  for (int threads : {1, 2, 7}) {
    std::vector<std::atomic<int>> calls(kHeads);
    const TeamSize team(threads);
    const Accuracy parallel = check_prefill_heads(out.data(), kHeads, kTokens, kWidth,
                                                  [&](std::int64_t bh, std::int64_t rows) {
                                                    calls[bh].fetch_add(1);
                                                    return reference_for(bh, rows);
                                                  });
    for (std::int64_t bh = 0; bh < kHeads; ++bh) EXPECT_EQ(calls[bh].load(), 1) << "head " << bh;
    EXPECT_EQ(parallel.rows_checked, kHeads * kTokens);
    EXPECT_EQ(parallel.max_abs_error, serial.max_abs_error);
    EXPECT_EQ(parallel.max_rel_error, serial.max_rel_error);
    EXPECT_TRUE(parallel.output_finite);
    // Head 23's error of 0.25 (in fp32) is the largest, against the largest reference of the last head.
    EXPECT_NEAR(parallel.max_abs_error, 0.25, 1e-6) << threads << " threads";
  }
}

TEST(CheckHeads, ParallelDecodeCheckFindsANonFiniteHead) {
  std::vector<float> out(kHeads * kWidth);
  const std::int64_t position = 3;
  for (std::int64_t bh = 0; bh < kHeads; ++bh) {
    for (std::int64_t c = 0; c < kWidth; ++c) out[bh * kWidth + c] = static_cast<float>(reference_value(bh, position, c));
  }
  const TeamSize team(4);
  const auto check = [&] {
    return check_decode_heads(out.data(), kHeads, kWidth, position,
                              [](std::int64_t bh, std::int64_t rows) { return reference_for(bh, rows); });
  };
  const Accuracy exact = check();
  EXPECT_TRUE(exact.output_finite);
  EXPECT_LT(exact.max_abs_error, 1e-6);
  EXPECT_EQ(exact.rows_checked, kHeads);
  out[30 * kWidth + 1] = NAN;
  const Accuracy broken = check();
  EXPECT_FALSE(broken.output_finite);
  EXPECT_TRUE(std::isinf(broken.max_abs_error));
}

TEST(CheckHeads, AStopRequestEndsTheParallelCheckWithACellFailure) {
  const std::vector<float> out = outputs_off_by([](std::int64_t) { return 0.0; });
  const TeamSize team(3);
  std::atomic<int> calls{0};
  bool ask_to_stop = true;
  const auto check = [&] {
    return check_prefill_heads(out.data(), kHeads, kTokens, kWidth, [&](std::int64_t bh, std::int64_t rows) {
      if (calls.fetch_add(1) == 4 && ask_to_stop) request_stop(SIGTERM);
      return reference_for(bh, rows);
    });
  };
  EXPECT_THROW(check(), CellFailure);
  EXPECT_LT(calls.load(), kHeads);  // the heads after the request were skipped
  clear_stop_request();
  calls = 0;
  ask_to_stop = false;
  EXPECT_NO_THROW(check());
  EXPECT_EQ(calls.load(), kHeads);
}

}  // namespace
}  // namespace arch_bench
