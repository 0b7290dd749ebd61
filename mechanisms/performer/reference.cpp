#include "mechanisms/performer/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "mechanisms/common/attention_shapes.hpp"

namespace arch_bench {

namespace {

double dot(const double* a, const double* b, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Orthonormalises the rows of the dk x dk block in place (modified Gram-Schmidt, each projection
// applied twice: one pass loses orthogonality in proportion to the block's condition number, and
// a Gaussian block is occasionally ill-conditioned).
void orthonormalise_rows(MatrixD& block) {
  const std::int64_t n = block.rows, dk = block.cols;
  for (std::int64_t r = 0; r < n; ++r) {
    double* row = block.row(r);
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t p = 0; p < r; ++p) {
        const double* previous = block.row(p);
        const double projection = dot(row, previous, dk);
        for (std::int64_t c = 0; c < dk; ++c) row[c] -= projection * previous[c];
      }
    }
    const double norm = std::sqrt(dot(row, row, dk));
    if (norm == 0) throw std::runtime_error("degenerate Gaussian block in the Performer projection");
    for (std::int64_t c = 0; c < dk; ++c) row[c] /= norm;
  }
}

}  // namespace

std::optional<PerformerFeatures> parse_performer_features(std::string_view name) {
  if (name == "favor+" || name == "positive") return PerformerFeatures::favor_plus;
  if (name == "trig") return PerformerFeatures::trig;
  return std::nullopt;
}

std::string performer_features_name(PerformerFeatures kind) {
  return kind == PerformerFeatures::trig ? "trig" : "favor+";
}

std::optional<PerformerStabilizer> parse_performer_stabilizer(std::string_view name) {
  if (name == "causal") return PerformerStabilizer::causal;
  if (name == "published") return PerformerStabilizer::published;
  return std::nullopt;
}

std::string performer_stabilizer_name(PerformerStabilizer stabilizer) {
  return stabilizer == PerformerStabilizer::published ? "published" : "causal";
}

std::int64_t performer_projection_rows(PerformerFeatures kind, std::int64_t features) {
  return kind == PerformerFeatures::trig ? features / 2 : features;
}

MatrixD draw_orthogonal_projection(std::int64_t rows, std::int64_t dk, std::uint64_t seed) {
  if (rows < 1 || dk < 1) throw std::invalid_argument("projection needs rows >= 1 and dk >= 1");
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  MatrixD projection(rows, dk);
  MatrixD block(dk, dk);
  for (std::int64_t begin = 0; begin < rows; begin += dk) {
    for (double& x : block.data) x = normal(rng);
    orthonormalise_rows(block);
    const std::int64_t take = std::min(dk, rows - begin);
    std::copy(block.data.begin(), block.data.begin() + take * dk, projection.row(begin));
  }
  // Row norms drawn independently of the directions: |g| for a fresh g ~ N(0, I_dk).
  for (std::int64_t r = 0; r < rows; ++r) {
    double squared = 0;
    for (std::int64_t c = 0; c < dk; ++c) {
      const double g = normal(rng);
      squared += g * g;
    }
    const double norm = std::sqrt(squared);
    for (std::int64_t c = 0; c < dk; ++c) projection(r, c) *= norm;
  }
  return projection;
}

MatrixD performer_projection(PerformerFeatures kind, std::int64_t features, std::int64_t dk,
                             std::uint64_t seed) {
  // The tag keeps this stream apart from the q/k/v stream of make_attention_inputs, which is
  // seeded from the same run seed.
  constexpr std::uint64_t kTag = 0x70657266'6f726d65ull;  // "performe"
  std::seed_seq sequence{seed, kTag, static_cast<std::uint64_t>(features),
                         static_cast<std::uint64_t>(dk), static_cast<std::uint64_t>(kind)};
  std::uint32_t words[2];  // seed_seq yields 32-bit words: two make one 64-bit seed
  sequence.generate(words, words + 2);
  const std::uint64_t stream = (std::uint64_t{words[0]} << 32) | words[1];
  MatrixD projection = draw_orthogonal_projection(performer_projection_rows(kind, features), dk, stream);
  for (double& x : projection.data) x = static_cast<double>(static_cast<float>(x));
  return projection;
}

PerformerTokenFeatures performer_token_features(const double* x, std::int64_t dk,
                                                const MatrixD& projection, PerformerFeatures kind,
                                                std::int64_t features, double eps) {
  if (projection.cols != dk || projection.rows != performer_projection_rows(kind, features)) {
    throw std::invalid_argument("projection shape does not match the feature map, m and dk");
  }
  const double scale = std::pow(static_cast<double>(dk), -0.25);
  std::vector<double> scaled(static_cast<std::size_t>(dk));
  for (std::int64_t c = 0; c < dk; ++c) scaled[c] = x[c] * scale;
  const double half_norm = 0.5 * dot(scaled.data(), scaled.data(), dk);
  PerformerTokenFeatures out;
  out.features.resize(static_cast<std::size_t>(features));
  if (kind == PerformerFeatures::favor_plus) {
    double c = -std::numeric_limits<double>::infinity();
    for (std::int64_t i = 0; i < features; ++i) {
      out.features[i] = dot(projection.row(i), scaled.data(), dk) - half_norm;
      c = std::max(c, out.features[i]);
    }
    const double ratio = 1.0 / std::sqrt(static_cast<double>(features));
    for (double& f : out.features) f = ratio * (std::exp(f - c) + eps);
    out.log_scale = c;
  } else {
    const std::int64_t half = features / 2;
    const double ratio = std::sqrt(2.0 / static_cast<double>(features));
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = dot(projection.row(i), scaled.data(), dk);
      out.features[i] = ratio * std::sin(angle);
      out.features[half + i] = ratio * std::cos(angle);
    }
    out.log_scale = half_norm;
  }
  return out;
}

std::vector<double> performer_feature_map(const double* x, std::int64_t dk, const MatrixD& projection,
                                          PerformerFeatures kind, std::int64_t features, double eps) {
  PerformerTokenFeatures token = performer_token_features(x, dk, projection, kind, features, eps);
  const double scale = std::exp(token.log_scale);
  for (double& f : token.features) f *= scale;
  return token.features;
}

double performer_key_max(const MatrixD& k, const MatrixD& projection) {
  const double scale = std::pow(static_cast<double>(k.cols), -0.25);
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t t = 0; t < k.rows; ++t) {
    for (std::int64_t i = 0; i < projection.rows; ++i) top = std::max(top, scale * dot(projection.row(i), k.row(t), k.cols));
  }
  return top;
}

std::vector<double> performer_published_features(const double* x, std::int64_t dk, const MatrixD& projection,
                                                 std::int64_t features, std::optional<double> key_max,
                                                 double eps) {
  if (projection.cols != dk || projection.rows != features) {
    throw std::invalid_argument("projection shape does not match m and dk");
  }
  const double scale = std::pow(static_cast<double>(dk), -0.25);
  std::vector<double> scaled(static_cast<std::size_t>(dk));
  for (std::int64_t c = 0; c < dk; ++c) scaled[c] = x[c] * scale;
  const double half_norm = 0.5 * dot(scaled.data(), scaled.data(), dk);
  std::vector<double> out(static_cast<std::size_t>(features));
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < features; ++i) {
    out[i] = dot(projection.row(i), scaled.data(), dk);
    top = std::max(top, out[i]);
  }
  const double shift = key_max ? *key_max : top;
  const double ratio = 1.0 / std::sqrt(static_cast<double>(features));
  for (double& f : out) f = ratio * (std::exp(f - half_norm - shift) + eps);
  return out;
}

namespace {
// The published stabiliser: features fixed by the key max of all the tokens, then the plain
// causal linear-attention recurrence on them.
PerformerResult published_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v, const MatrixD& projection,
                               std::int64_t m) {
  const std::int64_t dv = v.cols;
  PerformerResult result{MatrixD(q.rows, dv), MatrixD(m, dv), std::vector<double>(static_cast<std::size_t>(m), 0.0),
                         performer_key_max(k, projection), 0};
  for (std::int64_t t = 0; t < q.rows; ++t) {
    const std::vector<double> key = performer_published_features(k.row(t), k.cols, projection, m, result.running_max);
    const std::vector<double> query = performer_published_features(q.row(t), q.cols, projection, m, std::nullopt);
    double denominator = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      result.normalizer[i] += key[i];
      for (std::int64_t j = 0; j < dv; ++j) result.state(i, j) += key[i] * v(t, j);
      denominator += query[i] * result.normalizer[i];
    }
    if (!(denominator > 0) || !std::isfinite(denominator)) ++result.nonpositive_denominators;
    for (std::int64_t j = 0; j < dv; ++j) {
      double numerator = 0;
      for (std::int64_t i = 0; i < m; ++i) numerator += query[i] * result.state(i, j);
      result.outputs(t, j) = numerator / denominator;
    }
  }
  return result;
}
}  // namespace

PerformerResult performer_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                               const MatrixD& projection, PerformerFeatures kind,
                               std::int64_t features, PerformerStabilizer stabilizer) {
  check_attention_shapes(q, k, v);
  if (stabilizer == PerformerStabilizer::published) {
    if (kind != PerformerFeatures::favor_plus) {
      throw std::invalid_argument("the published stabiliser applies to favor+ features only");
    }
    return published_scan(q, k, v, projection, features);
  }
  const std::int64_t m = features, dv = v.cols;
  PerformerResult result{MatrixD(q.rows, dv), MatrixD(m, dv),
                         std::vector<double>(static_cast<std::size_t>(m), 0.0),
                         -std::numeric_limits<double>::infinity(), 0};
  MatrixD& state = result.state;
  std::vector<double>& z = result.normalizer;
  for (std::int64_t t = 0; t < q.rows; ++t) {
    const PerformerTokenFeatures key = performer_token_features(k.row(t), k.cols, projection, kind, m);
    // Query features only: its log_scale is common to numerator and denominator.
    const std::vector<double> query =
        performer_token_features(q.row(t), q.cols, projection, kind, m).features;
    // Update first (causal, inclusive), rescaling the state when the key raises the running max.
    const double new_max = std::max(result.running_max, key.log_scale);
    const double rescale = std::exp(result.running_max - new_max);  // 0 for the first key
    const double weight = std::exp(key.log_scale - new_max);
    result.running_max = new_max;
    for (std::int64_t i = 0; i < m; ++i) {
      const double a = weight * key.features[i];
      z[i] = z[i] * rescale + a;
      for (std::int64_t j = 0; j < dv; ++j) state(i, j) = state(i, j) * rescale + a * v(t, j);
    }
    double denominator = 0;
    for (std::int64_t i = 0; i < m; ++i) denominator += query[i] * z[i];
    if (!(denominator > 0) || !std::isfinite(denominator)) ++result.nonpositive_denominators;
    for (std::int64_t j = 0; j < dv; ++j) {
      double numerator = 0;
      for (std::int64_t i = 0; i < m; ++i) numerator += query[i] * state(i, j);
      result.outputs(t, j) = numerator / denominator;
    }
  }
  return result;
}

}  // namespace arch_bench
