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
//
// The published stabiliser (`--favor-stabilizer published`; performer-pytorch's softmax_kernel and
// google-research's FAVOR+ exp_softmax_kernel_transformation) places eps differently, so its
// outputs differ from the causal form's by far more than rounding (relative 0.4 at qk-scale 1):
//   query: f_i = m^(-1/2) [exp(w_i.q~ - |q~|^2/2 - max_j w_j.q~) + eps]
//   key:   f_i = m^(-1/2) [exp(w_i.k~ - |k~|^2/2 - M) + eps],  M = max over every key t and feature
//          j of w_j.k~_t (the |k~|^2/2 term is not part of either maximum).
// A query's shift still cancels, but eps is now a fixed floor under exp(.. - M), so M does not
// cancel: every row of a prefill depends on the largest key of the whole sequence, a look-ahead.
// The state is kept at the current M: S = sum_t f(k_t) v_t^T, z = sum_t f(k_t) (absolute, what
// performer-pytorch's context_cumsum and k_cumsum hold). When a later key raises M (a decode step),
// the exp part scales by a = exp(M_old - M_new) and the eps part does not:
//   S <- a S + m^(-1/2) eps (1 - a) sum_t v_t,   z <- a z + m^(-1/2) eps (1 - a) t,
// which is why the published state carries sum_t v_t and the token count besides S and z.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

enum class PerformerFeatures { favor_plus, trig };
// Where favor+'s eps sits (see above); trig features have no eps and take causal only.
enum class PerformerStabilizer { causal, published };

// "favor+" (alias "positive") or "trig"; anything else is nullopt.
std::optional<PerformerFeatures> parse_performer_features(std::string_view name);
std::string performer_features_name(PerformerFeatures kind);  // "favor+" | "trig"
// "causal" or "published"; anything else is nullopt.
std::optional<PerformerStabilizer> parse_performer_stabilizer(std::string_view name);
std::string performer_stabilizer_name(PerformerStabilizer stabilizer);

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

// The published stabiliser's pieces. performer_key_max: M = max_{t,i} w_i.k~_t over the rows of k.
// performer_published_features: one token's m features, f_i = m^(-1/2) [exp(w_i.x~ - |x~|^2/2 -
// shift) + eps] with shift = max_i w_i.x~ for a query (nullopt) or the key maximum `key_max`.
double performer_key_max(const MatrixD& k, const MatrixD& projection);
std::vector<double> performer_published_features(const double* x, std::int64_t dk, const MatrixD& projection,
                                                 std::int64_t features, std::optional<double> key_max,
                                                 double eps = kPerformerEpsilon);

struct PerformerResult {
  MatrixD outputs;                 // [tokens, dv]
  MatrixD state;                   // S after the last token, [m, dv], relative to running_max (published: absolute)
  std::vector<double> normalizer;  // z after the last token, [m], relative to running_max (published: absolute)
  double running_max = 0;          // M: the largest key log_scale seen (published: the key max M above)
  // Rows whose denominator phi(q).z was <= 0 or not finite (trig only; favor+ keeps it > 0).
  std::int64_t nonpositive_denominators = 0;
};

// Recurrent causal Performer attention over q/k/v [tokens, dk|dv] with `projection` (from
// performer_projection). Rejects (std::invalid_argument) empty or mismatched shapes, and the
// published stabiliser with trig features. Published: every row uses the key max M of all the
// tokens given (so a decode step at position L is the last row of the scan over L + 1 tokens).
PerformerResult performer_scan(const MatrixD& q, const MatrixD& k, const MatrixD& v,
                               const MatrixD& projection, PerformerFeatures kind,
                               std::int64_t features,
                               PerformerStabilizer stabilizer = PerformerStabilizer::causal);

}  // namespace arch_bench
