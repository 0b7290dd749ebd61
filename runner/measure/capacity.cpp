#include "runner/measure/capacity.hpp"

#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

namespace arch_bench {

namespace {

void normalise_row(MatrixD& m, std::int64_t r) {
  double norm = 0;
  for (std::int64_t c = 0; c < m.cols; ++c) norm += m(r, c) * m(r, c);
  norm = std::sqrt(norm);
  for (std::int64_t c = 0; c < m.cols; ++c) m(r, c) /= norm;
}

MatrixD draw_values(std::int64_t n, std::int64_t width, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::normal_distribution<double> normal;
  MatrixD values(n, width);
  for (double& x : values.data) x = normal(rng);
  return values;
}

}  // namespace

std::vector<std::int64_t> capacity_sizes(std::int64_t head_dim) {
  std::set<std::int64_t> sizes;
  for (std::int64_t n = 16; n <= 4 * head_dim; n *= 2) sizes.insert(n);
  if (head_dim >= 1) sizes.insert(head_dim);
  return {sizes.begin(), sizes.end()};
}

MatrixD draw_capacity_keys(std::int64_t n, std::int64_t width, std::uint64_t seed, CapacityKeys kind) {
  if (kind == CapacityKeys::orthogonal && n > width) {
    throw std::invalid_argument("orthogonal capacity keys need n <= key width (n = " + std::to_string(n) +
                                ", width = " + std::to_string(width) + ")");
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  MatrixD keys(n, width);
  for (double& x : keys.data) x = normal(rng);
  for (std::int64_t r = 0; r < n; ++r) {
    if (kind == CapacityKeys::orthogonal) {
      // Gram-Schmidt, twice for fp64 orthogonality to ~1e-15.
      for (int pass = 0; pass < 2; ++pass) {
        for (std::int64_t p = 0; p < r; ++p) {
          double dot = 0;
          for (std::int64_t c = 0; c < width; ++c) dot += keys(r, c) * keys(p, c);
          for (std::int64_t c = 0; c < width; ++c) keys(r, c) -= dot * keys(p, c);
        }
      }
    }
    normalise_row(keys, r);
  }
  return keys;
}

CapacityPoint capacity_point(const CapacityProbe& probe, std::int64_t n, std::int64_t head_dim, std::uint64_t seed,
                             CapacityKeys kind) {
  const MatrixD keys = draw_capacity_keys(n, probe.key_dim(head_dim), seed + static_cast<std::uint64_t>(n), kind);
  const MatrixD values = draw_values(n, head_dim, seed + static_cast<std::uint64_t>(n));
  const MatrixD read = probe.recall(keys, values);
  if (read.rows != n || read.cols != head_dim) {
    throw std::logic_error("a capacity probe returned " + std::to_string(read.rows) + " x " + std::to_string(read.cols) +
                           " values for " + std::to_string(n) + " x " + std::to_string(head_dim));
  }
  CapacityPoint point;
  point.n = n;
  for (std::int64_t i = 0; i < n; ++i) {
    double dot = 0, read_norm = 0, stored_norm = 0, diff = 0;
    for (std::int64_t c = 0; c < head_dim; ++c) {
      dot += read(i, c) * values(i, c);
      read_norm += read(i, c) * read(i, c);
      stored_norm += values(i, c) * values(i, c);
      diff += (read(i, c) - values(i, c)) * (read(i, c) - values(i, c));
    }
    point.mean_cosine += read_norm > 0 ? dot / std::sqrt(read_norm * stored_norm) : 0.0;
    point.mean_rel_l2 += std::sqrt(diff / stored_norm);
  }
  point.mean_cosine /= static_cast<double>(n);
  point.mean_rel_l2 /= static_cast<double>(n);
  return point;
}

CapacityCurve measure_capacity(const CapacityProbe& probe, std::int64_t head_dim, std::uint64_t seed,
                               const std::vector<std::int64_t>& sizes) {
  CapacityCurve curve;
  curve.setting = probe.setting();
  curve.key_dim = probe.key_dim(head_dim);
  curve.value_dim = head_dim;
  bool holding = true;
  for (std::int64_t n : sizes) {
    curve.points.push_back(capacity_point(probe, n, head_dim, seed));
    holding = holding && curve.points.back().mean_cosine >= kCapacityCosineThreshold;
    if (holding) curve.largest_n_cosine_0_9 = n;
  }
  return curve;
}

nlohmann::json capacity_json(const CapacityCurve& curve) {
  nlohmann::json n = nlohmann::json::array(), cosine = nlohmann::json::array(), rel_l2 = nlohmann::json::array();
  for (const CapacityPoint& point : curve.points) {
    n.push_back(point.n);
    cosine.push_back(std::isfinite(point.mean_cosine) ? nlohmann::json(point.mean_cosine) : nlohmann::json(nullptr));
    rel_l2.push_back(std::isfinite(point.mean_rel_l2) ? nlohmann::json(point.mean_rel_l2) : nlohmann::json(nullptr));
  }
  return {{"setting", curve.setting},
          {"key_dim", curve.key_dim},
          {"value_dim", curve.value_dim},
          {"n", n},
          {"mean_cosine", cosine},
          {"mean_rel_l2", rel_l2},
          {"largest_n_cosine_0_9",
           curve.largest_n_cosine_0_9 ? nlohmann::json(*curve.largest_n_cosine_0_9) : nlohmann::json(nullptr)}};
}

}  // namespace arch_bench
