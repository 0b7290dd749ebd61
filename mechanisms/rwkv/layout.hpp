#pragma once
// The layouts every RWKV kernel (CPU: kernels.hpp; CUDA: cuda.hpp) reads: the cell's shape, the
// per-channel parameters and the per-token inputs. Layouts follow the attention mechanisms: every
// per-token input is [batch_heads, tokens, dim] in the storage dtype (decode: [batch_heads, dim]),
// parameters are fp32 [heads, dim] shared by the batch, states are fp32. Plain structs (no math
// headers), so CUDA translation units include them too.
#include <cstdint>

namespace arch_bench {

struct RwkvShape {
  std::int64_t batch_heads = 0;
  std::int64_t heads = 0;  // parameters are indexed by bh % heads
  std::int64_t dim = 0;    // head_dim: dk = dv = dim
};

// Per-channel parameters, fp32 [heads, dim]. rwkv4: w = exp(time_decay) > 0 (the decay rate of
// seed 002's formula) and u = time_first; rwkv6: u = time_faaaa (the bonus); rwkv7: none.
struct RwkvParameters {
  const float* w = nullptr;
  const float* u = nullptr;
};

// Per-token inputs; a generation reads only its own (rwkv4: k, v; rwkv6: r, k, v, decay = d_t;
// rwkv7: r, k, v, decay = w_raw, kappa, iclr), the others may be null.
template <class T>
struct RwkvTokens {
  const T* r = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* decay = nullptr;
  const T* kappa = nullptr;
  const T* iclr = nullptr;
};

}  // namespace arch_bench
