#include "mechanisms/mamba/cuda_replay.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/ssm_activations.hpp"

namespace arch_bench {

namespace {

constexpr int kItems = kMambaScanItems, kGroup = kMambaScanStateGroup;
using Lanes = std::array<float, 32>;
using Items = std::array<std::array<float, kItems>, 32>;  // [lane][item]

// One warp: its channel's per-token values of the chunk, then its scan of one state entry.
struct WarpChunk {
  Items dt{}, du{}, u{}, y{};
};

// The kernel's read of a lane's items from a tile row: vector j of lane l holds items j v .. j v + v - 1.
template <class T>
float tile_item(const std::vector<T>& tile, int row_start, int lane, int item) {
  constexpr int v = mamba_tile_vector(static_cast<int>(sizeof(T)));
  return to_float(tile[static_cast<std::size_t>(row_start + ((item / v) * 32 + lane) * v + item % v)]);
}

}  // namespace

template <class T>
void replay_mamba_prefill(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                          float* state, T* out, MambaReplayFault fault) {
  constexpr int bytes = static_cast<int>(sizeof(T));
  const std::int64_t tokens = plan.tokens;
  const int channels = plan.channels, n = plan.state_size, stride = mamba_tile_stride(bytes);
  if (tokens == 0) return;
  std::vector<T> b_tile(static_cast<std::size_t>(kGroup * stride)), c_tile(b_tile.size());
  std::vector<float> carry(static_cast<std::size_t>(kMambaScanWarps * n));
  std::array<WarpChunk, kMambaScanWarps> warps;
  for (std::int64_t block = 0; block < plan.blocks; ++block) {
    const MambaScanRun run = mamba_scan_run(block, plan.channel_groups);
    auto active = [&](int w) { return run.first_channel + w < channels; };
    auto row_of = [&](int w) { return run.batch * channels + run.first_channel + w; };
    for (int w = 0; w < kMambaScanWarps; ++w) {
      for (int s = 0; s < n; ++s) carry[w * n + s] = active(w) ? state[row_of(w) * n + s] : 0.0f;
    }
    for (std::int64_t first = 0; first < tokens; first += kMambaScanChunk) {
      for (int w = 0; w < kMambaScanWarps; ++w) {
        if (!active(w)) continue;
        const int c = run.first_channel + w;
        const std::int64_t base = row_of(w) * tokens;
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < kItems; ++i) {
            const std::int64_t token = first + mamba_scan_token(lane, i);
            const bool inside = token < tokens;
            const float u = inside ? to_float(x.u[base + token]) : 0.0f;
            const float dt = inside ? softplus(to_float(x.dt_raw[base + token]) + params.dt_bias[c]) : 0.0f;
            warps[w].u[lane][i] = u;
            warps[w].dt[lane][i] = dt;
            warps[w].du[lane][i] = dt * u;
            warps[w].y[lane][i] = 0.0f;
          }
        }
      }
      for (int s0 = 0; s0 < n; s0 += kGroup) {
        // Staging, as the block's threads write it.
        for (int e = 0; e < kMambaScanChunk * kGroup; ++e) {
          const int token = e / kGroup, g = e % kGroup;
          const std::int64_t at = first + token;
          const bool inside = at < tokens && s0 + g < n;
          const std::int64_t from = (run.batch * tokens + at) * n + s0 + g;
          b_tile[static_cast<std::size_t>(mamba_tile_index(bytes, g, token))] = inside ? x.B[from] : T(0.0f);
          c_tile[static_cast<std::size_t>(mamba_tile_index(bytes, g, token))] = inside ? x.C[from] : T(0.0f);
        }
        const int group_size = std::min(kGroup, n - s0);
        for (int w = 0; w < kMambaScanWarps; ++w) {
          if (!active(w)) continue;
          WarpChunk& wc = warps[w];
          const int c = run.first_channel + w;
          for (int g = 0; g < group_size; ++g) {
            const int s = s0 + g;
            const float a2 = params.A[static_cast<std::int64_t>(c) * n + s] * kMambaLog2e;
            Items a{}, b{};
            Lanes fold_a{}, fold_b{};
            for (int lane = 0; lane < 32; ++lane) {
              float aa = 1.0f, bb = 0.0f;
              for (int i = 0; i < kItems; ++i) {
                a[lane][i] = std::exp2(wc.dt[lane][i] * a2);
                b[lane][i] = wc.du[lane][i] * tile_item(b_tile, g * stride, lane, i);
                bb = std::fma(a[lane][i], bb, b[lane][i]);
                aa = aa * a[lane][i];
              }
              fold_a[lane] = aa;
              fold_b[lane] = bb;
            }
            // Inclusive shuffle scan: at each offset every lane reads its neighbour's value from
            // before the step (__shfl_up_sync), lanes below the offset keep theirs.
            for (int offset = 1; offset < 32; offset *= 2) {
              const Lanes prev_a = fold_a, prev_b = fold_b;
              for (int lane = offset; lane < 32; ++lane) {
                fold_b[lane] = std::fma(prev_a[lane], prev_b[lane - offset], prev_b[lane]);
                fold_a[lane] = prev_a[lane] * prev_a[lane - offset];
              }
            }
            const float entering = fault == MambaReplayFault::carry_skipped ? 0.0f : carry[w * n + s];
            Lanes exit{};
            for (int lane = 0; lane < 32; ++lane) exit[lane] = std::fma(fold_a[lane], entering, fold_b[lane]);
            for (int lane = 0; lane < 32; ++lane) {
              float h = lane == 0 ? entering : exit[lane - 1];
              for (int i = 0; i < kItems; ++i) {
                h = std::fma(a[lane][i], h, b[lane][i]);
                wc.y[lane][i] = std::fma(tile_item(c_tile, g * stride, lane, i), h, wc.y[lane][i]);
              }
            }
            carry[w * n + s] = exit[31];
          }
        }
      }
      for (int w = 0; w < kMambaScanWarps; ++w) {
        if (!active(w)) continue;
        const int c = run.first_channel + w;
        const std::int64_t base = row_of(w) * tokens;
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < kItems; ++i) {
            const std::int64_t token = first + mamba_scan_token(lane, i);
            if (token >= tokens) continue;
            const float gate = silu(to_float(x.z[base + token]));
            out[base + token] = from_float<T>(std::fma(params.D[c], warps[w].u[lane][i], warps[w].y[lane][i]) * gate);
          }
        }
      }
    }
    for (int w = 0; w < kMambaScanWarps; ++w) {
      if (!active(w)) continue;
      for (int s = 0; s < n; ++s) state[row_of(w) * n + s] = carry[w * n + s];
    }
  }
}

template void replay_mamba_prefill<float>(const MambaPrefillPlan&, const MambaParameters&, const MambaTokens<float>&,
                                          float*, float*, MambaReplayFault);
template void replay_mamba_prefill<bf16>(const MambaPrefillPlan&, const MambaParameters&, const MambaTokens<bf16>&,
                                         float*, bf16*, MambaReplayFault);

}  // namespace arch_bench
