#pragma once
// The state-capacity (recall) curve of a mechanism (docs/design.md, "Capacity"; mechanisms/capacity.hpp):
// n random unit-norm keys with N(0, 1) values written into a fresh state, every key read back, for
// n = 16, 32, ... up to 4 x head_dim. softmax_kv's exact cache is the ceiling; an additive state
// blurs as n grows; the delta rule is exact for orthogonal keys up to n = head_dim.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mechanisms/capacity.hpp"

namespace arch_bench {

enum class CapacityKeys {
  random_unit,  // i.i.d. Gaussian keys normalised to unit length (near-orthogonal while n << d)
  orthogonal,   // orthonormal keys (n <= key width): exact recall is possible in a d-wide state
};

struct CapacityPoint {
  std::int64_t n = 0;
  double mean_cosine = 0;    // mean over the n reads of cos(retrieved, stored)
  double mean_rel_l2 = 0;    // mean over the n reads of |retrieved - stored| / |stored|
};

struct CapacityCurve {
  std::string setting;       // the probe's own setting (tau, feature map, gates)
  std::int64_t key_dim = 0;  // width of the keys the state is addressed with
  std::int64_t value_dim = 0;
  std::vector<CapacityPoint> points;
  // Largest n such that this and every smaller n measured keep mean cosine >= 0.9; nullopt when
  // even the smallest n does not.
  std::optional<std::int64_t> largest_n_cosine_0_9;
};

inline constexpr double kCapacityCosineThreshold = 0.9;

// 16, 32, 64, ... up to 4 x head_dim (and head_dim itself, where exact recall is expected to end).
std::vector<std::int64_t> capacity_sizes(std::int64_t head_dim);

// Unit-norm keys [n, width] drawn from `seed`; orthogonal keys need n <= width (std::invalid_argument).
MatrixD draw_capacity_keys(std::int64_t n, std::int64_t width, std::uint64_t seed, CapacityKeys kind);

CapacityPoint capacity_point(const CapacityProbe& probe, std::int64_t n, std::int64_t head_dim, std::uint64_t seed,
                             CapacityKeys kind = CapacityKeys::random_unit);
CapacityCurve measure_capacity(const CapacityProbe& probe, std::int64_t head_dim, std::uint64_t seed,
                               const std::vector<std::int64_t>& sizes);

nlohmann::json capacity_json(const CapacityCurve& curve);

}  // namespace arch_bench
