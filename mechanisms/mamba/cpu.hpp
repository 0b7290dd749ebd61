#pragma once
// CPU kernels of Mamba's selective scan (S6). Layouts (rows r = b * channels + c):
//   u, dt_raw, z, out  [rows, tokens]        channel-major, one row per channel (decode: [rows])
//   B, C               [batch, tokens, N]    token-major, shared by the channels (decode: [batch, N])
//   state h            [rows, N]             fp32 whatever the storage dtype
//   A [channels, N] (= -exp(A_log) < 0), dt_bias [channels], D [channels]: fp32 parameters
// Every kernel vectorises over N and widens storage values to fp32 (fp32 accumulate).
#include <cstdint>

#include "mechanisms/common/kernel_variant.hpp"

namespace arch_bench {

struct MambaShape {
  std::int64_t batch = 0;
  std::int64_t channels = 0;    // d_inner
  std::int64_t state_size = 0;  // N

  std::int64_t rows() const { return batch * channels; }
};

struct MambaParameters {
  const float* A = nullptr;        // [channels, N], every entry < 0
  const float* dt_bias = nullptr;  // [channels]
  const float* D = nullptr;        // [channels]
};

// The per-token, per-channel inputs of `tokens` tokens in the layouts above.
template <class T>
struct MambaTokens {
  const T* u = nullptr;
  const T* dt_raw = nullptr;
  const T* z = nullptr;
  const T* B = nullptr;
  const T* C = nullptr;
};

inline constexpr std::int64_t kMambaMaxStateSize = 256;

// One step of the recurrence as an element of the scan: the affine map h -> a h + b, with
// a = exp(dt A) and b = dt B_t u_t (per state entry). Composition is associative:
// combine(first, second) is "first, then second", so a prefix of the sequence folds into one
// element whatever the bracketing, and that is what lets the time axis be split.
template <class Real>
struct ScanElement {
  Real a = 1;  // identity: (1, 0)
  Real b = 0;
};

template <class Real>
ScanElement<Real> combine(ScanElement<Real> first, ScanElement<Real> second) {
  return {second.a * first.a, second.a * first.b + second.b};
}

// One decode step for every channel, in place on `state`; the token's inputs use the decode
// layouts ([rows] and [batch, N]). Allocates nothing; OpenMP over channels when the step is
// large enough to pay for waking threads.
template <class T, KernelVariant V = KernelVariant::dispatched>
void mamba_decode_step(const MambaShape& shape, const MambaParameters& params, const MambaTokens<T>& x,
                       float* state, T* out);

// The chunk length the timed prefill uses on `threads` threads. On a CPU the channels already
// give far more independent scans than there are cores (the default cell has 512 per batch), so
// the time axis is only split when rows < 4 * threads: then each row is cut into enough chunks
// (at least kMambaMinChunk tokens each) to give every thread work. Otherwise it returns `tokens`:
// one chunk per row, which is the sequential scan with no extra pass.
inline constexpr std::int64_t kMambaMinChunk = 64;
std::int64_t mamba_prefill_chunk(const MambaShape& shape, std::int64_t tokens, int threads);

// Floats of workspace mamba_prefill_chunked needs: one (a, b) pair of N-vectors per chunk and
// row when the time axis is split, none when chunk >= tokens. Both this and the prefill reject
// chunk < 1 with std::invalid_argument.
std::int64_t mamba_prefill_workspace_floats(const MambaShape& shape, std::int64_t tokens,
                                            std::int64_t chunk);

// Causal prefill over `tokens` tokens as a chunked parallel scan over time (chunk > 0):
//   1. per chunk, fold its steps into one element (a, b) of the scan (parallel over rows x chunks);
//   2. per row, scan the chunk elements from the incoming state: the state entering each chunk;
//   3. per chunk, re-run the recurrence from that state, writing outputs (parallel again).
// This is the reduce-then-scan form. Phase 1 repeats the state update (without C.h and the
// output) for all but the last chunk, so it does about 1.7x the exp/FMA work of the sequential
// scan; measured on one Zen 3 core at d_inner = 512, N = 16, bf16, L = 2048-8192, chunks of 128
// take 1.35x the time of one chunk per row (1.7x while exp_nonpositive compiles to scalar code).
// What it buys is a split of the time axis, which pays only when rows are fewer than threads x a
// few (batch 1 with a handful of channels, or a GPU with thousands of lanes to fill). On a 2-core
// CPU with hundreds of channels the rows already keep both cores busy and it buys nothing, which is
// why mamba_prefill_chunk() normally picks one chunk per row. It is the form a GPU kernel uses
// (chunks per thread block, carries between blocks), and the tests hold it to the
// sequential scan. `state` carries in and out (zero for a fresh sequence); `workspace` holds
// mamba_prefill_workspace_floats() floats (may be null when that is 0).
template <class T, KernelVariant V = KernelVariant::dispatched>
void mamba_prefill_chunked(const MambaShape& shape, const MambaParameters& params, std::int64_t tokens,
                           std::int64_t chunk, const MambaTokens<T>& x, float* state, float* workspace,
                           T* out);

// The same prefill as a loop of decode steps over time (single-threaded): the recurrent form the
// chunked scan must equal.
template <class T, KernelVariant V = KernelVariant::dispatched>
void mamba_prefill_sequential(const MambaShape& shape, const MambaParameters& params, std::int64_t tokens,
                              const MambaTokens<T>& x, float* state, T* out);

}  // namespace arch_bench
