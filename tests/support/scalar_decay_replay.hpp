#pragma once
// The arithmetic of the chunkwise tensor-core prefill (mechanisms/common/chunk_scalar_decay.cuh)
// replayed on the CPU for one head: the same chunks, the same decays in fp32 and the same bf16
// roundings of the operands (V scaled by its decay, the masked scores, diag(exp(b)) Q, the state
// entering a chunk, and each chunk's own state where the workspace holds it in bf16). What it
// cannot replay is the order in which a tensor core adds its fp32 products; it accumulates in
// fp64 and rounds to fp32, an fp32-level difference far below the bf16 roundings it models. Tests
// compare it with the fp64 references: the strongest evidence a machine without a GPU gives that
// the kernels' precision plan meets the bf16 tolerance. replay_fused_scalar_decay (below) is the
// fused state pass's arithmetic, with faults that its tests must catch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"

namespace arch_bench::testing {

// How the workspace holds each chunk's own state U_c and the state entering a chunk.
enum class ChunkStateStorage { fp32, bf16 };

// One head's operands as the kernels see them after the policy's loads: every q, k, v value
// representable in bf16; log_decay [tokens] <= 0.
struct ScalarDecayHead {
  std::int64_t tokens = 0;
  int dk = 0;
  int dv = 0;
  std::vector<float> q, k;  // [tokens][dk]
  std::vector<float> v;     // [tokens][dv]
  std::vector<float> log_decay;
};

struct ScalarDecayReplay {
  std::vector<float> outputs;  // O [tokens][dv] in fp32, before the mechanism's epilogue
  std::vector<float> state;    // S after the last token [dk][dv]
};

inline float to_bf16(float x) { return round_through<bf16>(x); }

// The pieces every replay of a chunk shares (the three kernels' and the fused pass's), for the chunk
// of h's tokens [first, first + rows).
namespace scalar_decay_chunk {

inline constexpr int kC = kScalarDecayChunk;

// b: the inclusive cumulative log-decay over the chunk in fp32, flat over the padding (or, for a
// faulty replay, running on with the last token's decay repeated over it).
inline void cumulative_decay(const ScalarDecayHead& h, std::int64_t first, int rows, std::vector<float>& b,
                             bool padding_decays = false) {
  float sum = 0.0f;
  for (int m = 0; m < kC; ++m) {
    if (m < rows) {
      sum += h.log_decay[static_cast<std::size_t>(first + m)];
    } else if (padding_decays) {
      sum += h.log_decay[static_cast<std::size_t>(first + rows - 1)];
    }
    b[static_cast<std::size_t>(m)] = sum;
  }
}

inline float q_at(const ScalarDecayHead& h, std::int64_t first, int m, int i) {
  return h.q[static_cast<std::size_t>((first + m) * h.dk + i)];
}
inline float k_at(const ScalarDecayHead& h, std::int64_t first, int m, int i) {
  return h.k[static_cast<std::size_t>((first + m) * h.dk + i)];
}
inline float v_at(const ScalarDecayHead& h, std::int64_t first, int m, int j) {
  return h.v[static_cast<std::size_t>((first + m) * h.dv + j)];
}

// The chunk's own state U_c = K^T bf16(diag(exp(b_last - b)) V) [dk][dv], each element the tensor
// core's fp32 sum (here fp64, which the callers round once to fp32).
inline void own_state(const ScalarDecayHead& h, std::int64_t first, int rows, const std::vector<float>& b,
                      std::vector<double>& u) {
  const int dk = h.dk, dv = h.dv;
  const float b_last = b[kC - 1];
  std::vector<float> scaled_v(static_cast<std::size_t>(rows * dv));
  for (int m = 0; m < rows; ++m) {
    for (int j = 0; j < dv; ++j) {
      scaled_v[static_cast<std::size_t>(m * dv + j)] =
          to_bf16(v_at(h, first, m, j) * std::exp(b_last - b[static_cast<std::size_t>(m)]));
    }
  }
  for (int i = 0; i < dk; ++i) {
    for (int j = 0; j < dv; ++j) {
      double acc = 0;
      for (int m = 0; m < rows; ++m) acc += double{k_at(h, first, m, i)} * scaled_v[static_cast<std::size_t>(m * dv + j)];
      u[static_cast<std::size_t>(i * dv + j)] = acc;
    }
  }
}

// Kernel (3): O = bf16((Q K^T) . M) V + bf16(diag(exp(b)) Q) bf16(S_c), S_c the state entering the
// chunk (`entering`, [dk][dv], rounded to bf16 here as the kernel reads it), into outputs [tokens][dv].
inline void outputs(const ScalarDecayHead& h, std::int64_t first, int rows, const std::vector<float>& b,
                    const std::vector<float>& entering, std::vector<float>& out) {
  const int dk = h.dk, dv = h.dv;
  std::vector<float> p(static_cast<std::size_t>(kC * kC)), scaled_q(static_cast<std::size_t>(kC * dk));
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j <= i; ++j) {
      double a = 0;
      for (int r = 0; r < dk; ++r) a += double{q_at(h, first, i, r)} * k_at(h, first, j, r);
      p[static_cast<std::size_t>(i * kC + j)] =
          to_bf16(static_cast<float>(a) * std::exp(b[static_cast<std::size_t>(i)] - b[static_cast<std::size_t>(j)]));
    }
    for (int r = 0; r < dk; ++r) {
      scaled_q[static_cast<std::size_t>(i * dk + r)] = to_bf16(q_at(h, first, i, r) * std::exp(b[static_cast<std::size_t>(i)]));
    }
  }
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < dv; ++j) {
      double o = 0;
      for (int m = 0; m <= i; ++m) o += double{p[static_cast<std::size_t>(i * kC + m)]} * v_at(h, first, m, j);
      for (int r = 0; r < dk; ++r) {
        o += double{scaled_q[static_cast<std::size_t>(i * dk + r)]} * to_bf16(entering[static_cast<std::size_t>(r * dv + j)]);
      }
      out[static_cast<std::size_t>((first + i) * dv + j)] = static_cast<float>(o);
    }
  }
}

// The chunks of h in order from S = `state`: each chunk's decays and own state U_c, then
// update(state, u, carry, entering) (how a replay makes S_{c+1} and the state entering chunk c from
// S_c, U_c and exp(b_last)), then the chunk's outputs from `entering`.
template <class Update>
ScalarDecayReplay replay_chunks(const ScalarDecayHead& h, std::vector<float> state, bool padding_decays,
                                const Update& update) {
  ScalarDecayReplay out;
  out.outputs.assign(static_cast<std::size_t>(h.tokens * h.dv), 0.0f);
  const std::int64_t chunks = (h.tokens + kC - 1) / kC;
  std::vector<float> b(kC), entering(state.size());
  std::vector<double> u(state.size());
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t first = c * kC;
    const int rows = scalar_decay_chunk_rows(h.tokens, c);
    cumulative_decay(h, first, rows, b, padding_decays);
    own_state(h, first, rows, b, u);
    update(state, u, std::exp(b[kC - 1]), entering);
    outputs(h, first, rows, b, entering, out.outputs);
  }
  out.state = std::move(state);
  return out;
}

}  // namespace scalar_decay_chunk

// `state` [dk][dv]: S before the first token (a prefill continues from it). Kernel (1) makes U_c,
// kernel (2) S_{c+1} = exp(b_last) S_c + U_c, the state entering chunk c kept as the workspace
// stores it, and U_c too; kernel (3) the outputs.
inline ScalarDecayReplay replay_chunk_scalar_decay(const ScalarDecayHead& h, std::vector<float> state,
                                                   ChunkStateStorage storage) {
  const auto stored = [&](float x) { return storage == ChunkStateStorage::bf16 ? to_bf16(x) : x; };
  return scalar_decay_chunk::replay_chunks(
      h, std::move(state), false,
      [&](std::vector<float>& s, const std::vector<double>& u, float carry, std::vector<float>& entering) {
        for (std::size_t e = 0; e < s.size(); ++e) {
          entering[e] = stored(s[e]);
          s[e] = std::fma(carry, s[e], stored(static_cast<float>(u[e])));
        }
      });
}

// The fused state pass (mechanisms/common/chunk_scalar_decay_fused.cuh) replaces kernels (1) and (2):
// S is carried in fp32 from chunk to chunk and never rounded there; S_c, the state entering chunk c,
// is stored in bf16 before the chunk's update, then S = exp(b_last) S (an fp32 multiply, as the
// fragments are scaled) and S += K^T bf16(diag(exp(b_last - b)) V) (the tensor core's fp32 sum, here
// fp64 rounded once to fp32, added in fp32). Kernel (3) is the three-kernel replay's. The faults are
// kernels that a wrong fused pass would be, which the tests require to miss the tolerance by far:
//   decay_after_accumulate  S = exp(b_last) (S + K^T V'): the chunk's own tokens decayed twice
//   entering_after_update   the state stored for chunk c is S_{c+1}: chunk c sees its own tokens twice
//   tail_padding_decayed    the short last chunk's b runs on over its padding (the last token's decay
//                           repeated), so b_last and every weight exp(b_last - b_j) decay too far
//   carry_not_decayed       S = S + K^T V': the carried state never decays
enum class FusedFault { none, decay_after_accumulate, entering_after_update, tail_padding_decayed, carry_not_decayed };

inline ScalarDecayReplay replay_fused_scalar_decay(const ScalarDecayHead& h, std::vector<float> state,
                                                   FusedFault fault = FusedFault::none) {
  return scalar_decay_chunk::replay_chunks(
      h, std::move(state), fault == FusedFault::tail_padding_decayed,
      [&](std::vector<float>& s, const std::vector<double>& u, float carry, std::vector<float>& entering) {
        for (std::size_t e = 0; e < s.size(); ++e) {
          if (fault != FusedFault::entering_after_update) entering[e] = to_bf16(s[e]);
          switch (fault) {
            case FusedFault::decay_after_accumulate:
              s[e] = carry * static_cast<float>(double{s[e]} + u[e]);
              break;
            case FusedFault::carry_not_decayed:
              s[e] = static_cast<float>(double{s[e]} + u[e]);
              break;
            default:
              s[e] = static_cast<float>(double{carry * s[e]} + u[e]);
              break;
          }
          if (fault == FusedFault::entering_after_update) entering[e] = to_bf16(s[e]);
        }
      });
}

}  // namespace arch_bench::testing
