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
// the decays, U and S stay fp32 in global memory and are rounded to bf16 only as operands.
#include <cstddef>
#include <cstdint>

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
  std::int64_t prefix_blocks_per_head = 0;  // ceil(dk * dv / threads): one thread per element of S
  std::int64_t output_blocks = 0;  // batch_heads * chunks
  int ld_k = 0;    // bf16 row stride of Q_c and K_c
  int ld_v = 0;    // bf16 row stride of V_c and S
  int ld_p = 0;    // bf16 row stride of the masked scores
  int ld_acc = 0;  // fp32 row stride of the scores and of O
  ScalarDecayStateLayout state_layout;
  ScalarDecayOutputLayout output_layout;
  // Workspace (fp32, from the cell's allocator): U_c, then the state entering chunk c,
  // [batch_heads][chunks][dk][dv]; and each chunk's total log-decay [batch_heads][chunks].
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

// The workspace bytes of that plan without building it (0 where the head sizes are not supported).
std::int64_t chunk_scalar_decay_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv);

// Index maps shared by the kernels and the CPU tests.
// Tokens of chunk `chunk` (C, or fewer in the last chunk).
constexpr int scalar_decay_chunk_rows(std::int64_t tokens, std::int64_t chunk) {
  return tokens - chunk * kScalarDecayChunk < kScalarDecayChunk ? static_cast<int>(tokens - chunk * kScalarDecayChunk)
                                                                 : kScalarDecayChunk;
}
// Element offset of chunk `chunk` of head bh in the workspace's states.
constexpr std::int64_t scalar_decay_state_offset(const ChunkScalarDecayPlan& plan, std::int64_t bh,
                                                 std::int64_t chunk) {
  return (bh * plan.chunks + chunk) * plan.dk * plan.dv;
}

}  // namespace arch_bench
