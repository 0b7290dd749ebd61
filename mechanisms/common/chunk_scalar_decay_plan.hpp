#pragma once
// Launch planning of the chunkwise tensor-core prefill of "scalar-decay linear attention"
// (chunk_scalar_decay.cuh): per (batch, head) a state S (dk x dv, fp32) with one scalar decay per
// token, S_t = a_t S_{t-1} + k_t v_t^T, o_t = S_t^T q_t (retnet: a_t = gamma_h; Mamba-2's SSD:
// a_t = exp(dt_t A_h)). Plain C++, compiled in every build and tested on the CPU
// (tests/test_chunk_scalar_decay_plan.cpp).
//
// Three kernels, as linear attention's chunkwise prefill: (1) per chunk in parallel, the chunk's own
// contribution U_c = K_c^T diag(exp(b_last - b_j)) V_c and its total log-decay b_last (b: the
// inclusive cumulative log-decay inside the chunk); (2) an exclusive prefix over chunks per element
// of S, S_{c+1} = exp(b_last,c) S_c + U_c, leaving the state entering each chunk in place of U_c and
// the final state in S; (3) per chunk in parallel, O = ((Q K^T) . M) V + diag(exp(b_i)) Q S_c with
// M_ij = exp(b_i - b_j) for j <= i, else 0. The products run on tensor cores (wmma bf16 -> fp32);
// the decays and the carried S stay fp32, the per-chunk states U_c and S_c are bf16 in memory.
//
// Why bf16 per-chunk states and a separate prefix pass, in bytes moved (the kernels are bound by
// memory, not by the tensor cores). At B16 H8 d64 L8192 (retnet: dk = dv = 64; 128 heads x 128
// chunks x 4096 state elements = 67M): q, k, v and the output are 134 MB each in bf16; (1) reads
// k and v, (3) reads q, k, v and writes the output: 805 MB whatever the states.
//   fp32 states:  (1) writes 268 MB, (2) reads and rewrites 537, (3) reads 268: 1074 MB; with the
//                 operands 1879 MB, ~0.39 ms at an H200's ~4.8 TB/s (fla's chunk_simple_gla 0.42)
//   bf16 states:  134 + 268 + 134 = 537 MB; 1342 MB in all, ~0.28 ms (this)
//   fused state pass carrying S across chunks in registers (fla's chunk_fwd_h), writing each
//                 entering state once in bf16: 134 + 134 = 268 MB; 1074 MB, ~0.22 ms
// At Mamba-2's N = 128, P = 64 (dk = 128, dv = 64: 8192 elements a state) the state bytes double:
// 2147 MB fp32, 1074 MB bf16, 537 MB fused. The fused pass saves another 0.06 ms at B16 but puts
// each chunk's U_c product and its 16 KB of K and V loads on a sequential chain per head (or per
// column tile of S): at batch 1 (8 heads) that is 8-32 blocks on 132 SMs, 128 dependent steps at
// L8192, where the separate prefix walks the same chain with nothing but 8 loads a step in flight
// and kernel (1) runs every chunk in parallel. Issue 39 asks linear_attention's prefill not to be
// slower than today at B1, so the parallel form with bf16 states is the one written.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace arch_bench {

inline constexpr int kScalarDecayChunk = 64;     // C: tokens per chunk
inline constexpr int kScalarDecayThreads = 256;  // 8 warps per block, every kernel
inline constexpr int kScalarDecayFragment = 16;  // the wmma tile (m = n = k = 16)
inline constexpr int kScalarDecayMaxDim = 128;   // dk and dv: multiples of 16 up to this
// bf16 rows padded by 8 elements (16 bytes), fp32 rows by 4: the rows stay 32-byte aligned for
// wmma::load_matrix_sync while consecutive rows start in different banks.
inline constexpr int kScalarDecayBf16Pad = 8;
inline constexpr int kScalarDecayFloatPad = 4;
// Shared memory an sm_90 block may opt in to (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::size_t kScalarDecayMaxSharedBytes = 227 * 1024;

// Byte offsets of the shared-memory regions, each 128-byte aligned (wmma needs 32).
struct ScalarDecayStateLayout {  // kernel (1)
  std::size_t k = 0;             // K_c, bf16 [C][ld_k]
  std::size_t v = 0;             // V_c scaled by exp(b_last - b_j), bf16 [C][ld_v]
  std::size_t decay = 0;         // b, fp32 [C]
  std::size_t u = 0;             // each warp's 16 x 16 tile of U_c, fp32 [warps][16][16], before bf16
  std::size_t bytes = 0;
};
struct ScalarDecayOutputLayout {  // kernel (3)
  std::size_t q = 0;              // Q_c, then diag(exp(b_i)) Q_c in place, bf16 [C][ld_k]
  std::size_t k = 0;              // K_c, bf16 [C][ld_k]
  std::size_t v = 0;              // V_c, bf16 [C][ld_v]
  std::size_t s = 0;              // S entering the chunk, bf16 [dk][ld_v]
  std::size_t p = 0;              // (Q K^T) . M, bf16 [C][ld_p]
  std::size_t acc = 0;            // Q K^T, then O, fp32 [C][ld_acc]
  std::size_t decay = 0;          // b, fp32 [C]
  std::size_t bytes = 0;
};

struct ChunkScalarDecayPlan {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  std::int64_t chunks = 0;         // ceil(tokens / C); the last chunk may be shorter (zero-padded)
  int threads = kScalarDecayThreads;
  std::int64_t state_blocks = 0;   // batch_heads * chunks: block = bh * chunks + chunk
  std::int64_t prefix_blocks = 0;  // batch_heads * prefix_blocks_per_head
  std::int64_t prefix_blocks_per_head = 0;  // ceil(dk * dv / 2 / threads): one thread per pair of S
  std::int64_t output_blocks = 0;  // batch_heads * chunks
  int ld_k = 0;    // bf16 row stride of Q_c and K_c
  int ld_v = 0;    // bf16 row stride of V_c and S
  int ld_p = 0;    // bf16 row stride of the masked scores
  int ld_acc = 0;  // fp32 row stride of the scores and of O
  ScalarDecayStateLayout state_layout;
  ScalarDecayOutputLayout output_layout;
  // Workspace (from the cell's allocator, as floats): U_c, then the state entering chunk c, in
  // bf16 [batch_heads][chunks][dk][dv], two to a float (workspace_state_elements floats, half the
  // state elements: the launch takes a float pointer, as its callers allocate); and each chunk's
  // total log-decay, fp32 [batch_heads][chunks].
  std::int64_t workspace_state_elements = 0;
  std::int64_t workspace_decay_elements = 0;
  std::int64_t workspace_bytes() const { return 4 * (workspace_state_elements + workspace_decay_elements); }
  std::size_t max_shared_bytes() const {
    return state_layout.bytes > output_layout.bytes ? state_layout.bytes : output_layout.bytes;
  }
};

// Whether the tensor-core prefill takes these head sizes (dk, dv multiples of 16 in 16..128), or why not.
bool chunk_scalar_decay_supports(std::int64_t dk, std::int64_t dv);

// The plan for `batch_heads` heads of `tokens` tokens. Throws std::invalid_argument for head sizes
// chunk_scalar_decay_supports refuses, SizeOverflow where a count does not fit.
ChunkScalarDecayPlan plan_chunk_scalar_decay(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                             std::int64_t dv);

// Why `plan` cannot launch on any device, or nullopt: a grid past 2^31 - 1 blocks, or shared memory
// past kScalarDecayMaxSharedBytes (cell-level messages: the plan is a cell's prefill).
std::optional<std::string> chunk_scalar_decay_unlaunchable(const ChunkScalarDecayPlan& plan);

// The workspace bytes of that plan without building it (0 where the head sizes are not supported).
std::int64_t chunk_scalar_decay_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv);

// Index maps shared by the kernels and the CPU tests.
// Tokens of chunk `chunk` (C, or fewer in the last chunk).
constexpr int scalar_decay_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kScalarDecayChunk < kScalarDecayChunk ? static_cast<int>(tokens - chunk * kScalarDecayChunk)
                                                                 : kScalarDecayChunk;
}
// Element (bf16) offset of chunk `chunk` of head bh in the workspace's states.
constexpr std::int64_t scalar_decay_state_offset(const ChunkScalarDecayPlan& plan, std::int64_t bh,
                                                 std::int64_t chunk) {
  return (bh * plan.chunks + chunk) * plan.dk * plan.dv;
}

}  // namespace arch_bench
