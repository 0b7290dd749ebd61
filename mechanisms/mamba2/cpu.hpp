#pragma once
// CPU kernels of Mamba-2's SSD layer (reference.hpp states the math). The state of head bh is kept
// transposed, S = H^T [N, P] in fp32 (row s = state column s), so that a decode step is the same
// state pass as RetNet's and Gated DeltaNet's (mechanisms/common/state_pass.hpp: S = a S + B_t u^T,
// out = S^T C_t with u = dt x_t), and the chunked prefill's products are row-major matrix products
// (mechanisms/common/chunk_matmul.hpp). Conformance files carry H [P, N], as mamba_ssm does.
#include <cstdint>

#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

struct Mamba2Shape {
  std::int64_t batch = 0;
  std::int64_t heads = 0;
  std::int64_t groups = 1;      // heads / groups heads share one B, C
  std::int64_t head_dim = 0;    // P
  std::int64_t state_size = 0;  // N

  std::int64_t rows() const { return batch * heads; }
  // Row (b, group) of B and C for row bh = b * heads + h.
  std::int64_t group_row(std::int64_t bh) const {
    return (bh / heads) * groups + (bh % heads) / (heads / groups);
  }
};

// The layer's fp32 parameters, one per head.
struct Mamba2Parameters {
  const float* A;        // -exp(A_log) < 0
  const float* dt_bias;
  const float* D;
};

// A sequence's inputs in storage T. Prefill: x, z [rows, tokens, P], dt_raw [rows, tokens],
// B, C [batch * groups, tokens, N]. Decode: the same with one token.
template <class T>
struct Mamba2Tokens {
  const T* x;
  const T* dt_raw;
  const T* z;
  const T* B;
  const T* C;
};

// One decode step, in place on state [rows, N, P]; out [rows, P]. Allocates nothing.
template <class T, KernelVariant V = KernelVariant::dispatched>
void mamba2_decode_step(const Mamba2Shape& shape, const Mamba2Parameters& params, const Mamba2Tokens<T>& token,
                        float* state, T* out);

// Workspace regions start on 64-byte lines.
constexpr std::int64_t mamba2_workspace_padded(std::int64_t floats) { return (floats + 15) / 16 * 16; }

// Floats of workspace one thread of the chunked prefill uses for a chunk length: C [chunk, N],
// B^T [N, chunk], dt x and Y [chunk, P], the scores [chunk, chunk] and one decay row. Inline: this
// file's kernels are compiled once per ISA variant, and a plain function would be defined in each.
inline std::int64_t mamba2_chunk_workspace_floats(const Mamba2Shape& shape, std::int64_t chunk) {
  const std::int64_t n = shape.state_size, width = shape.head_dim;
  return 2 * mamba2_workspace_padded(chunk * n) + 2 * mamba2_workspace_padded(chunk * width) +
         mamba2_workspace_padded(chunk * chunk) + mamba2_workspace_padded(chunk);
}

// Causal prefill over `tokens` tokens by the chunked SSD algorithm. Per chunk of R tokens, with
// l_r = dt_r A the log decays and c_r = l_0 + ... + l_r their running sum inside the chunk (fp64):
//   intra-chunk  Y  = (L o C B^T) (dt x),  L_rc = exp(c_r - c_c) for c <= r, else 0
//   inter-chunk  Y += diag(exp(c_r)) C S_0
//   state        S  = exp(c_{R-1}) S_0 + (diag(exp(c_{R-1} - c_c)) B)^T (dt x)
// then out = (Y + D x) silu(z). `state` carries in and out (zero for a fresh sequence); `workspace`
// holds `threads` x mamba2_chunk_workspace_floats(shape, chunk) floats and the (batch, head) rows are
// spread over that many threads.
template <class T, KernelVariant V = KernelVariant::dispatched>
void mamba2_prefill_chunked(const Mamba2Shape& shape, const Mamba2Parameters& params, std::int64_t tokens,
                            std::int64_t chunk, const Mamba2Tokens<T>& in, float* state, float* workspace,
                            int threads, T* out);

// The same prefill as a loop of decode steps: the recurrent form the chunked one must equal.
template <class T, KernelVariant V = KernelVariant::dispatched>
void mamba2_prefill_recurrent(const Mamba2Shape& shape, const Mamba2Parameters& params, std::int64_t tokens,
                              const Mamba2Tokens<T>& in, float* state, T* out);

}  // namespace arch_bench
