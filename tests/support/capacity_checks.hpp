#pragma once
// What a capacity probe must do with keys that cannot interfere, for every mechanism's tests.
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "mechanisms/capacity.hpp"
#include "mechanisms/common/matrix.hpp"

namespace arch_bench::testing {

// A fresh state of `probe` given n one-hot keys (key i on axis i of an n-wide key space, so no two
// writes overlap) returns each key's value, `channels` distinct numbers a key, within `tolerance`.
inline void expect_one_hot_keys_recalled(const CapacityProbe& probe, std::int64_t n, std::int64_t channels,
                                         double tolerance) {
  MatrixD keys(n, n), values(n, channels);
  for (std::int64_t i = 0; i < n; ++i) {
    keys(i, i) = 1.0;
    for (std::int64_t j = 0; j < channels; ++j) values(i, j) = std::sin(1.0 + static_cast<double>(i * channels + j));
  }
  const MatrixD read = probe.recall(keys, values);
  for (std::size_t i = 0; i < read.data.size(); ++i) EXPECT_NEAR(read.data[i], values.data[i], tolerance) << i;
}

}  // namespace arch_bench::testing
