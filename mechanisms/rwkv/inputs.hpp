#pragma once
// Seeded inputs of one RWKV time-mixing layer for a cell. r, k, v are the attention inputs of the
// same seed and shape (r, the receptance, plays the query's role: it is the q stream), so RWKV rows
// are measured on the tokens every other mechanism of the run sees. The generation's own inputs
// (decays, bonus, kappa, iclr) come from a stream of the seed and the shape, in the ranges of the
// RWKV papers' initialisations (docs/design.md, "Inputs"). Sequence values are rounded through the
// storage dtype and parameters are fp32: the fp64 references see exactly what the kernels see.
#include <array>
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"
#include "core/cell.hpp"

namespace arch_bench {

enum class RwkvVersion { v4, v6, v7 };

// The generation's mechanism id: "rwkv4", "rwkv6" or "rwkv7".
const char* rwkv_mechanism_id(RwkvVersion version);

// The per-token inputs, in the order of RwkvTokens.
enum RwkvInput : int { kRwkvR, kRwkvK, kRwkvV, kRwkvDecay, kRwkvKappa, kRwkvIclr, kRwkvInputCount };

// Which per-token inputs a generation reads.
std::array<bool, kRwkvInputCount> rwkv_inputs_used(RwkvVersion version);

struct RwkvInputs {
  RwkvVersion version = RwkvVersion::v6;
  std::int64_t batch_heads = 0;
  std::int64_t heads = 0;
  std::int64_t tokens = 0;  // decode: L + 1 (context plus the new token); prefill: L
  std::int64_t dim = 0;
  // [batch_heads, tokens, dim]; empty for the inputs the generation does not read.
  //   decay: rwkv6 d_t (w_t = exp(-exp(d_t))); rwkv7 w_raw (w_t = exp(-e^{-0.5} sigmoid(w_raw)))
  //   kappa: rwkv7 kappa_hat, unit-norm per head and token; iclr: rwkv7 a_iclr in (0, 1)
  std::array<std::vector<float>, kRwkvInputCount> sequence;
  // fp32 [heads, dim]: rwkv4 w = exp(time_decay) and u = time_first; rwkv6 u = time_faaaa.
  std::vector<float> w, u;
  // rwkv4's time_decay (w = exp(time_decay), rounded to fp32), kept for the conformance files.
  std::vector<float> time_decay;

  const float* at(RwkvInput input, std::int64_t bh, std::int64_t t) const {
    return sequence[input].data() + (bh * tokens + t) * dim;
  }
  // One head's input rows [0, rows) widened to fp64 ([rows, dim]).
  MatrixD head_matrix(RwkvInput input, std::int64_t bh, std::int64_t rows) const;
  // Parameter row of head bh ([dim]) widened to fp64.
  std::vector<double> parameter(const std::vector<float>& p, std::int64_t bh) const;
};

RwkvInputs make_rwkv_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed, RwkvVersion version);

// The parameters alone (they depend on the seed and the shape, not on the tokens).
void draw_rwkv_parameters(RwkvInputs& inputs, std::uint64_t seed);

// kappa_hat rows of x [rows, dim]: each row divided by its L2 norm (a zero row stays zero).
void normalize_rows(std::vector<float>& x, std::int64_t dim);

}  // namespace arch_bench
