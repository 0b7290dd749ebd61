#include "mechanisms/mamba/cuda_replay.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/ssm_activations.hpp"
#include "mechanisms/mamba/entry_activations.hpp"

namespace arch_bench {

namespace {

constexpr int kItems = kMambaScanItems, kGroup = kMambaScanStateGroup;
using Lanes = std::array<float, 32>;
using Items = std::array<std::array<float, kItems>, 32>;  // [lane][item]

// One warp: its channel's per-token values of the chunk and its lanes' sums of dt.
struct WarpChunk {
  Items dt{}, du{}, u{}, y{};
  Lanes lane_dt{};
};

// The kernel's read of a lane's items from an fp32 tile row: vector j of lane l holds items 4 j .. 4 j + 3.
float tile_item(const std::vector<float>& tile, int row_start, int lane, int item) {
  constexpr int v = mamba_tile_vector(4);
  return tile[static_cast<std::size_t>(row_start + ((item / v) * 32 + lane) * v + item % v)];
}

// One scan block of mamba_warp_scan_kernel: its warps' carried h ([warps][N], shared memory in the
// kernel) and dt sums, and its walk over one segment's chunks (scan_chunk).
template <class T>
class ScanBlock {
 public:
  ScanBlock(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
            MambaReplayFault fault)
      : carry(static_cast<std::size_t>(kMambaScanWarps * plan.state_size)),
        plan_(plan),
        params_(params),
        x_(x),
        fault_(fault),
        b_tile_(static_cast<std::size_t>(kGroup * mamba_tile_stride(4))),
        c_tile_(b_tile_.size()) {}

  bool active(const MambaScanRun& run, int w) const { return run.first_channel + w < plan_.channels; }
  std::int64_t row_of(const MambaScanRun& run, int w) const { return run.batch * plan_.channels + run.first_channel + w; }

  // The segment of `run` from the h in `carry`, leaving its end in `carry` and (without outputs)
  // its warps' dt sums in `dt_total`.
  void walk(const MambaScanRun& run, bool outputs, T* out) {
    dt_total.fill(0.0f);
    const std::int64_t begin = run.segment * plan_.segment_tokens;
    const std::int64_t end = std::min(plan_.tokens, begin + plan_.segment_tokens);
    for (std::int64_t first = begin; first < end; first += kMambaScanChunk) chunk(run, first, outputs, out);
  }

  std::vector<float> carry;
  std::array<float, kMambaScanWarps> dt_total{};

 private:
  void chunk(const MambaScanRun& run, std::int64_t first, bool outputs, T* out) {
    const std::int64_t tokens = plan_.tokens;
    const int n = plan_.state_size, stride = mamba_tile_stride(4);
    for (int w = 0; w < kMambaScanWarps; ++w) {
      if (!active(run, w)) continue;
      const int c = run.first_channel + w;
      const std::int64_t base = row_of(run, w) * tokens;
      Lanes sums{};
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < kItems; ++i) {
          const std::int64_t token = first + mamba_scan_token(lane, i);
          const bool inside = token < tokens;
          const float u = inside ? to_float(x_.u[base + token]) : 0.0f;
          const float dt = inside ? softplus(to_float(x_.dt_raw[base + token]) + params_.dt_bias[c]) : 0.0f;
          warps_[w].u[lane][i] = u;
          warps_[w].dt[lane][i] = dt;
          warps_[w].du[lane][i] = dt * u;
          warps_[w].y[lane][i] = 0.0f;
          sums[lane] = i == 0 ? dt : sums[lane] + dt;
        }
      }
      warps_[w].lane_dt = sums;
      // The butterfly over __shfl_xor_sync: every lane ends with the same sum; lane 0's is kept.
      for (int offset = 16; offset > 0; offset >>= 1) {
        const Lanes before = sums;
        for (int lane = 0; lane < 32; ++lane) sums[lane] = before[lane] + before[lane ^ offset];
      }
      if (!outputs) dt_total[w] += sums[0];
    }
    for (int s0 = 0; s0 < n; s0 += kGroup) {
      // Staging, widened to fp32 (exact) as the block's threads write it, by vectors or one by one.
      for (int e = 0; e < kMambaScanChunk * kGroup; ++e) {
        const int token = e / kGroup, g = e % kGroup;
        const std::int64_t at = first + token;
        const bool inside = at < tokens && s0 + g < n;
        const std::int64_t from = (run.batch * tokens + at) * n + s0 + g;
        b_tile_[static_cast<std::size_t>(mamba_tile_index(4, g, token))] = inside ? to_float(x_.B[from]) : 0.0f;
        c_tile_[static_cast<std::size_t>(mamba_tile_index(4, g, token))] = inside ? to_float(x_.C[from]) : 0.0f;
      }
      const int group_size = std::min(kGroup, n - s0);
      for (int w = 0; w < kMambaScanWarps; ++w) {
        if (active(run, w)) scan_group(run, w, s0, group_size, stride, outputs);
      }
    }
    if (!outputs) return;
    for (int w = 0; w < kMambaScanWarps; ++w) {
      if (!active(run, w)) continue;
      const int c = run.first_channel + w;
      const std::int64_t base = row_of(run, w) * tokens;
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < kItems; ++i) {
          const std::int64_t token = first + mamba_scan_token(lane, i);
          if (token >= tokens) continue;
          const float gate = silu(to_float(x_.z[base + token]));
          out[base + token] = from_float<T>(std::fma(params_.D[c], warps_[w].u[lane][i], warps_[w].y[lane][i]) * gate);
        }
      }
    }
  }

  // Warp w's scan of the state entries s0 .. s0 + group_size - 1 over the chunk.
  void scan_group(const MambaScanRun& run, int w, int s0, int group_size, int stride, bool outputs) {
    WarpChunk& wc = warps_[w];
    const int n = plan_.state_size, c = run.first_channel + w;
    for (int g = 0; g < group_size; ++g) {
      const int s = s0 + g;
      const float a2 = params_.A[static_cast<std::int64_t>(c) * n + s] * kMambaLog2e;
      Items a{}, b{};
      Lanes fold_a{}, fold_b{};
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < kItems; ++i) {
          a[lane][i] = std::exp2(wc.dt[lane][i] * a2);
          b[lane][i] = wc.du[lane][i] * tile_item(b_tile_, g * stride, lane, i);
        }
        float bb = b[lane][0];
        for (int i = 1; i < kItems; ++i) bb = std::fma(a[lane][i], bb, b[lane][i]);
        // The lane's decay as one exp of its dt sum (not the product of its items' decays).
        fold_a[lane] = fault_ == MambaReplayFault::lane_decay_from_first_item ? a[lane][0]
                                                                              : std::exp2(wc.lane_dt[lane] * a2);
        fold_b[lane] = bb;
      }
      // Inclusive shuffle scan: at each offset every lane reads its neighbour's value from before
      // the step (__shfl_up_sync), lanes below the offset keep theirs.
      for (int offset = 1; offset < 32; offset *= 2) {
        const Lanes prev_a = fold_a, prev_b = fold_b;
        for (int lane = offset; lane < 32; ++lane) {
          fold_b[lane] = std::fma(prev_a[lane], prev_b[lane - offset], prev_b[lane]);
          fold_a[lane] = prev_a[lane] * prev_a[lane - offset];
        }
      }
      const float entering = fault_ == MambaReplayFault::carry_skipped ? 0.0f : carry[w * n + s];
      Lanes exit{};
      for (int lane = 0; lane < 32; ++lane) exit[lane] = std::fma(fold_a[lane], entering, fold_b[lane]);
      if (outputs) {
        for (int lane = 0; lane < 32; ++lane) {
          float h = lane == 0 ? entering : exit[lane - 1];
          for (int i = 0; i < kItems; ++i) {
            h = std::fma(a[lane][i], h, b[lane][i]);
            wc.y[lane][i] = std::fma(tile_item(c_tile_, g * stride, lane, i), h, wc.y[lane][i]);
          }
        }
      }
      carry[w * n + s] = exit[31];
    }
  }

  const MambaPrefillPlan& plan_;
  const MambaParameters& params_;
  const MambaTokens<T>& x_;
  MambaReplayFault fault_;
  std::vector<float> b_tile_, c_tile_;  // fp32 whatever T, as the kernel stages them
  std::array<WarpChunk, kMambaScanWarps> warps_;
};

// mamba_segment_combine_kernel: per (row, entry) the segments' maps in order from the carried h.
void combine_segments(const MambaPrefillPlan& plan, const MambaParameters& params, const float* state,
                      std::vector<float>& workspace, MambaReplayFault fault) {
  const int n = plan.state_size;
  for (std::int64_t row = 0; row < plan.batch * plan.channels; ++row) {
    const int c = static_cast<int>(row % plan.channels);
    for (int s = 0; s < n; ++s) {
      const float a2 = params.A[static_cast<std::int64_t>(c) * n + s] * kMambaLog2e;
      float h = state[row * n + s];
      for (std::int64_t k = 0; k < plan.segments; ++k) {
        float& slot = workspace[static_cast<std::size_t>(mamba_segment_state_index(plan, row, k, s))];
        if (k == plan.segments - 1) {
          slot = h;
          break;
        }
        const float from_zero = slot;
        slot = h;
        const float decay = std::exp2(workspace[static_cast<std::size_t>(mamba_segment_dt_index(plan, row, k))] * a2);
        h = fault == MambaReplayFault::segment_carry_skipped   ? 0.0f
            : fault == MambaReplayFault::segment_decay_skipped ? h + from_zero
                                                               : std::fma(decay, h, from_zero);
      }
    }
  }
}

// y of one token over a channel's L lanes, in the order of the kernel's transpose-reduce
// (cuda_entry.cu, entry_reduce): partners `half` = L / 2, L / 4, ... apart add their partials, so
// that at L 4 the sum is (p_0 + p_2) + (p_1 + p_3) (each add commutes, so which lane of a pair
// makes it does not change the value).
float reduce_lanes(std::vector<float> part) {
  for (std::size_t half = part.size() / 2; half >= 1; half /= 2) {
    for (std::size_t i = 0; i < half; ++i) part[i] = part[i] + part[i + half];
  }
  return part[0];
}

// One pass of mamba_entry_scan_kernel (cuda_entry.cu) over `segments` segments of every row.
// outputs: h enters from `entering` (workspace slots, or the state unsplit) and out is written, the
// last segment leaving h in `state`; map pass: h from zero, the end h and dt sum into `workspace`.
template <class T>
void entry_pass(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                const float* entering, float* state, std::vector<float>& workspace, T* out, bool outputs,
                std::int64_t segments, MambaReplayFault fault) {
  const int n = plan.state_size, lanes = mamba_entry_lanes_per_channel(n), per_lane = kMambaEntryEntriesPerThread;
  const std::int64_t tokens = plan.tokens;
  // The entries of a lane's C h chain (chain_entry_dropped: its last is left out).
  const int chained = fault == MambaReplayFault::chain_entry_dropped ? per_lane - 1 : per_lane;
  std::vector<float> h(static_cast<std::size_t>(n)), a2(h.size());
  std::vector<float> part(static_cast<std::size_t>(lanes));
  for (std::int64_t row = 0; row < plan.batch * plan.channels; ++row) {
    const std::int64_t b = row / plan.channels;
    const int c = static_cast<int>(row % plan.channels);
    for (std::int64_t segment = 0; segment < segments; ++segment) {
      const std::int64_t begin = segment * plan.segment_tokens, end = std::min(tokens, begin + plan.segment_tokens);
      for (int s = 0; s < n; ++s) {
        a2[s] = params.A[static_cast<std::int64_t>(c) * n + s] * kMambaLog2e;
        h[s] = outputs ? entering[mamba_segment_state_index(plan, row, segment, s)] : 0.0f;
      }
      float dt_sum = 0.0f;
      for (std::int64_t first = begin; first < end; first += kMambaEntryTile) {
        for (int t = 0; t < kMambaEntryTile; ++t) {
          const std::int64_t token = first + t;
          const bool inside = token < end;
          // write_stage: dt = 0 and u = 0 past the segment (the identity step).
          const float u = inside ? to_float(x.u[row * tokens + token]) : 0.0f;
          const float dt = inside ? entry_softplus(to_float(x.dt_raw[row * tokens + token]) + params.dt_bias[c]) : 0.0f;
          const float du = dt * u;
          const float skip = params.D[c] * u;
          const float gate = entry_silu(inside ? to_float(x.z[row * tokens + token]) : 0.0f);
          dt_sum += dt;
          for (int lane = 0; lane < lanes; ++lane) {
            float y = 0.0f;
            for (int i = 0; i < per_lane; ++i) {
              const int s = per_lane * lane + i;
              const std::int64_t at = (b * tokens + token) * n + s;
              const float bv = inside ? to_float(x.B[at]) : 0.0f, cv = inside ? to_float(x.C[at]) : 0.0f;
              const float a = std::exp2(dt * a2[s]);  // ex2.approx
              h[s] = std::fma(a, h[s], du * bv);
              // The lane's y partial: C h of its first entry, then an FMA per further entry.
              if (i == 0) {
                y = cv * h[s];
              } else if (i < chained) {
                y = std::fma(cv, h[s], y);
              }
            }
            part[static_cast<std::size_t>(lane)] = y;
          }
          if (!outputs || !inside) continue;
          if (fault == MambaReplayFault::lane_partial_dropped) part[static_cast<std::size_t>(lanes - 1)] = 0.0f;
          float sum = reduce_lanes(part);
          if (fault == MambaReplayFault::reduction_token_skipped && t == 7) sum = 0.0f;
          out[row * tokens + token] = from_float<T>((sum + skip) * gate);
        }
      }
      for (int s = 0; s < n; ++s) {
        if (!outputs) {
          workspace[static_cast<std::size_t>(mamba_segment_state_index(plan, row, segment, s))] = h[s];
        } else if (segment == plan.segments - 1) {
          state[row * n + s] = h[s];
        }
      }
      if (!outputs) workspace[static_cast<std::size_t>(mamba_segment_dt_index(plan, row, segment))] = dt_sum;
    }
  }
}

}  // namespace

template <class T>
void replay_mamba_prefill(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                          float* state, T* out, MambaReplayFault fault) {
  if (plan.tokens == 0) return;
  if (plan.kernel != MambaScanKernel::lane) {
    std::vector<float> workspace(static_cast<std::size_t>(plan.workspace_floats));
    const bool split = plan.segments > 1;
    if (split) {
      entry_pass<T>(plan, params, x, nullptr, state, workspace, nullptr, false, plan.segments - 1, fault);
      combine_segments(plan, params, state, workspace, fault);
    }
    entry_pass<T>(plan, params, x, split ? workspace.data() : state, state, workspace, out, true, plan.segments, fault);
    return;
  }
  const int n = plan.state_size;
  ScanBlock<T> block(plan, params, x, fault);
  const bool split = plan.segments > 1;
  std::vector<float> workspace(static_cast<std::size_t>(plan.workspace_floats));
  auto at = [](std::int64_t i) { return static_cast<std::size_t>(i); };
  if (split) {
    // Pass 1: segments 0 .. S - 2 from h = 0.
    for (std::int64_t b = 0; b < plan.map_blocks; ++b) {
      const MambaScanRun run = mamba_scan_run(b, plan.channel_groups, plan.segments - 1);
      std::fill(block.carry.begin(), block.carry.end(), 0.0f);
      block.walk(run, false, nullptr);
      for (int w = 0; w < kMambaScanWarps; ++w) {
        if (!block.active(run, w)) continue;
        const std::int64_t row = block.row_of(run, w);
        for (int s = 0; s < n; ++s) workspace[at(mamba_segment_state_index(plan, row, run.segment, s))] = block.carry[w * n + s];
        workspace[at(mamba_segment_dt_index(plan, row, run.segment))] = block.dt_total[static_cast<std::size_t>(w)];
      }
    }
    combine_segments(plan, params, state, workspace, fault);  // pass 2
  }
  // The outputs pass (the whole kernel unsplit): from the entering h, the last segment leaves h in state.
  const float* entering = split ? workspace.data() : state;
  for (std::int64_t b = 0; b < plan.blocks; ++b) {
    const MambaScanRun run = mamba_scan_run(b, plan.channel_groups, plan.segments);
    for (int w = 0; w < kMambaScanWarps; ++w) {
      for (int s = 0; s < n; ++s) {
        block.carry[at(w * n + s)] =
            block.active(run, w) ? entering[mamba_segment_state_index(plan, block.row_of(run, w), run.segment, s)] : 0.0f;
      }
    }
    block.walk(run, true, out);
    if (run.segment != plan.segments - 1) continue;
    for (int w = 0; w < kMambaScanWarps; ++w) {
      if (!block.active(run, w)) continue;
      for (int s = 0; s < n; ++s) state[block.row_of(run, w) * n + s] = block.carry[at(w * n + s)];
    }
  }
}

template void replay_mamba_prefill<float>(const MambaPrefillPlan&, const MambaParameters&, const MambaTokens<float>&,
                                          float*, float*, MambaReplayFault);
template void replay_mamba_prefill<bf16>(const MambaPrefillPlan&, const MambaParameters&, const MambaTokens<bf16>&,
                                         float*, bf16*, MambaReplayFault);

}  // namespace arch_bench
