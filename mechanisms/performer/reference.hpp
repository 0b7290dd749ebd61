#pragma once
// fp64 reference of Performer attention for one head (Choromanski et al. 2021): random features
// phi with E_W[phi(q).phi(k)] = exp(q.k / sqrt(dk)), then the causal linear-attention recurrence
// on them, o_t = phi(q_t)^T S_t / (phi(q_t)^T z_t).
//
// Feature maps (x~ = x * dk^(-1/4), w_i the rows of the projection W):
// - favor+ (positive random features, FAVOR+): phi(x) = m^(-1/2) [exp(w_i.x~ - |x~|^2/2) + eps'],
//   W [m, dk] block-orthogonal. Every feature is > 0, so the normaliser phi(q).z is > 0.
// - trig (the sin/cos random Fourier features of seed 002): W [m/2, dk], phi(x) =
//   sqrt(2/m) exp(|x~|^2/2) [sin(w_i.x~), cos(w_i.x~)]; phi(q).phi(k) = (2/m) exp(..) sum_i
//   cos(w_i.(q~ - k~)) is unbiased too, but its terms have both signs, so phi(q).z can be <= 0.
//
// Stabilisation (the part that makes exp() safe): a token's features are kept as
// phi(x) = exp(log_scale) * features, with every |feature| <= ~1:
// - favor+: log_scale c = max_i (w_i.x~ - |x~|^2/2), features = m^(-1/2) [exp(w_i.x~ - |x~|^2/2 - c)
//   + eps]; eps therefore sits relative to the token's own largest feature (eps' = eps e^c above).
// - trig: log_scale = |x~|^2/2, features = sqrt(2/m) [sin, cos].
// A query's exp(log_scale) multiplies numerator and denominator alike and is dropped. A key's
// exp(log_scale) is a per-key weight that must be kept (dropping it would reweight keys), so the
// state carries it relative to a running max M of the keys' log-scales:
//   S_t = sum_{j<=t} exp(c_j - M_t) features(k_j) v_j^T,  z_t = sum_{j<=t} exp(c_j - M_t) features(k_j).
// M_t is one constant for every key of the sum, so it cancels in o_t exactly: the output does not
// depend on it, which is what makes the running max causal-safe. When a new key raises M, S and z
// are multiplied by exp(M_old - M_new) (as online softmax does); every weight stays <= 1.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

enum class PerformerFeatures { favor_plus, trig };

// "favor+" (alias "positive") or "trig"; anything else is nullopt.
std::optional<PerformerFeatures> parse_performer_features(std::string_view name);
std::string performer_features_name(PerformerFeatures kind);  // "favor+" | "trig"

// Keeps every favor+ feature >= eps relative to the token's largest, so phi(q).z > 0 even when
// the exponents span more than fp32's range; FAVOR+'s reference code uses the same 1e-6. Its bias
// on the kernel estimate is O(eps) relative.
inline constexpr double kPerformerEpsilon = 1e-6;

// Rows of W a map of m features needs: m for favor+, m/2 for trig (each row gives sin and cos).
std::int64_t performer_projection_rows(PerformerFeatures kind, std::int64_t features);

// Block-orthogonal Gaussian projection [rows, dk] from `seed` (std::mt19937_64): each block of dk
// rows is the orthonormalised (Gram-Schmidt) rows of a dk x dk N(0, 1) matrix, the last block
// truncated; row i is then rescaled to the norm of a fresh N(0, I_dk) vector (chi(dk)-distributed),
// so each row is marginally N(0, I_dk) (the estimator stays unbiased) while rows within a block are
// exactly orthogonal (lower variance: Choromanski et al. 2021, section 2.4).
MatrixD draw_orthogonal_projection(std::int64_t rows, std::int64_t dk, std::uint64_t seed);

// The projection a cell uses: drawn from the run's seed, the map, m and dk, then rounded to fp32
// (the values the kernel stores), so kernel and reference compute with the same W. Shared by all
// heads of the cell, as in the Performer layer.
MatrixD performer_projection(PerformerFeatures kind, std::int64_t features, std::int64_t dk,
                             std::uint64_t seed);

// One token's features in the stabilised form described above: phi(x) = exp(log_scale) * features.
struct PerformerTokenFeatures {
  std::vector<double> features;  // m values
  double log_scale = 0;
};
PerformerTokenFeatures performer_token_features(const double* x, std::int64_t dk,
                                                const MatrixD& projection, PerformerFeatures kind,
                                                std::int64_t features, double eps = kPerformerEpsilon);

// The unstabilised phi(x) = exp(log_scale) * features (overflows for large |x|; for tests of the
// estimator: with eps = 0, E_W[phi(q).phi(k)] = exp(q.k / sqrt(dk))).
std::vector<double> performer_feature_map(const double* x, std::int64_t dk, const MatrixD& projection,
                                          PerformerFeatures kind, std::int64_t features,
                                          double eps = kPerformerEpsilon);

struct PerformerResult {
  MatrixD outputs;                 // [tokens, dv]
  MatrixD state;                   // S after the last token, [m, dv], relative to running_max
  std::vector<double> normalizer;  // z after the last token, [m], relative to running_max
  double running_max = 0;          // M: the largest key log_scale seen
  // Rows whose denominator phi(q).z was <= 0 or not finite (trig only; favor+ keeps it > 0).
  std::int64_t nonpositive_denominators = 0;
};

// Recurrent causal Performer attention over q/k/v [tokens, dk|dv] with `projection` (from
// performer_projection). Rejects (std::invalid_argument) empty or mismatched shapes.
PerformerResult performer_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                               const MatrixD& projection, PerformerFeatures kind,
                               std::int64_t features);

}  // namespace arch_bench
