#pragma once
// fp64 reference of RWKV-7 (Goose) time mixing for one head, in its recurrent form, row-vector
// convention: S [dv, dk] (row i = value channel, column j = key channel), and per token
//   w_t = exp(-e^{-0.5} sigmoid(w_raw_t)),  a_t = -kappa_hat_t,  b_t = kappa_hat_t * iclr_t
//   S_t = S_{t-1} (diag(w_t) + a_t^T b_t) + v_t^T k_t               (S_{-1} = 0)
//   o_t = S_t r_t
// i.e. S_t[i][j] = S[i][j] w_j + (sum_l S[i][l] a_l) b_j + v_i k_j: the generalised delta rule,
// whose a^T b term removes iclr times the state's component along kappa_hat.
#include <vector>

#include "mechanisms/common/matrix.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"

namespace arch_bench {

// r, w_raw, k, v, kappa, iclr [tokens, dim]. Throws std::invalid_argument on an empty or
// mismatched input.
RwkvMatrixResult rwkv7_reference(const MatrixD& r, const MatrixD& w_raw, const MatrixD& k, const MatrixD& v,
                                 const MatrixD& kappa, const MatrixD& iclr);

}  // namespace arch_bench
