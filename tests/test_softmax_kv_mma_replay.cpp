// The arithmetic of the register-resident bf16 prefill (mechanisms/softmax_kv/cuda_prefill_mma.cu)
// replayed on the CPU against the fp64 reference: the same plan (64-row query and key tiles, the
// key tiles it loads and the ones it masks, via cuda_plan.hpp's functions the kernel calls too), the
// same online softmax in the exp2 domain with log2(e)/sqrt(d) folded into one FMA, P rounded to bf16
// before P V and summed as rounded, the sum kept per lane of a row's four (columns 2t, 2t+1 of each
// 8-key block) and added across them at the end, the output rounded to bf16. Only the order of the
// fp32 sums inside one mma differs from the GPU. Without a GPU this is the evidence that the
// algorithm (tile skipping, masking only where the plan says, the rescaling) is right; the kernel's
// fragment plumbing is covered by the GPU tests (tests/gpu/test_softmax_kv_gpu.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {
using testing::small_cell;

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kLanesPerRow = 4;  // the lanes of one fragment row (t = lane % 4)

float round_bf16(float x) { return to_float(bf16(x)); }

// Deliberate departures from the kernel, to show the comparison catches them.
enum class Fault {
  none,
  skip_one_tile_too_many,    // start one key tile after plan.first_key_tile
  mask_only_the_diagonal,    // forget the band-crossing tiles' mask
};

// One query head [tokens][dim] over its K/V head, as the kernel's warps compute it row by row.
void replay_head(const SoftmaxPrefillCudaPlan& plan, const float* q, const float* k, const float* v, float* out,
                 Fault fault) {
  const std::int64_t dim = plan.dim, tokens = plan.tokens, tile = plan.query_rows, keys = plan.keys_per_tile;
  const std::int64_t band = plan.band();
  const float scale_log2 = kLog2e / std::sqrt(static_cast<float>(dim));
  std::vector<float> s(static_cast<std::size_t>(keys)), o(static_cast<std::size_t>(dim));
  for (std::int64_t query_tile = 0; query_tile < plan.query_tiles; ++query_tile) {
    const std::int64_t q0 = query_tile * tile;
    std::int64_t first = plan.first_key_tile(query_tile);
    if (fault == Fault::skip_one_tile_too_many) first = std::min(first + 1, query_tile);
    for (std::int64_t t = q0; t < std::min(tokens, q0 + tile); ++t) {
      float m = -INFINITY;
      float lane_sum[kLanesPerRow] = {};
      std::fill(o.begin(), o.end(), 0.0f);
      for (std::int64_t key_tile = first; key_tile <= query_tile; ++key_tile) {
        const std::int64_t k0 = key_tile * keys;
        bool masked = plan.key_tile_masked(query_tile, key_tile);
        if (fault == Fault::mask_only_the_diagonal) masked = k0 + keys - 1 > q0;
        // S: fp32 sums of exact bf16 products, in 16-channel steps; rows past the last token are
        // the kernel's zero-filled rows.
        for (std::int64_t j = 0; j < keys; ++j) {
          const std::int64_t key = k0 + j;
          float score = 0.0f;
          if (key < tokens) {
            for (std::int64_t c = 0; c < dim; ++c) score = std::fma(q[t * dim + c], k[key * dim + c], score);
          }
          if (masked && !(key <= t && key > t - band && key < tokens)) score = -INFINITY;
          s[static_cast<std::size_t>(j)] = score;
        }
        float tile_max = -INFINITY;
        for (float score : s) tile_max = std::max(tile_max, score);
        const float m_new = std::max(m, tile_max * scale_log2);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float correction = std::exp2(m - m_use);
        m = m_new;
        float row_sum[kLanesPerRow] = {};
        for (std::int64_t j = 0; j < keys; j += 2) {
          const float p0 = round_bf16(std::exp2(std::fma(s[static_cast<std::size_t>(j)], scale_log2, -m_use)));
          const float p1 = round_bf16(std::exp2(std::fma(s[static_cast<std::size_t>(j + 1)], scale_log2, -m_use)));
          row_sum[(j % 8) / 2] += p0 + p1;
          s[static_cast<std::size_t>(j)] = p0;
          s[static_cast<std::size_t>(j + 1)] = p1;
        }
        for (int lane = 0; lane < kLanesPerRow; ++lane) lane_sum[lane] = lane_sum[lane] * correction + row_sum[lane];
        for (float& value : o) value *= correction;
        for (std::int64_t j = 0; j < keys && k0 + j < tokens; ++j) {
          const float p = s[static_cast<std::size_t>(j)];
          for (std::int64_t c = 0; c < dim; ++c) o[c] = std::fma(p, v[(k0 + j) * dim + c], o[c]);
        }
      }
      // The shuffles xor 1 then xor 2.
      const float l = (lane_sum[0] + lane_sum[1]) + (lane_sum[2] + lane_sum[3]);
      const float inverse = 1.0f / l;
      for (std::int64_t c = 0; c < dim; ++c) out[t * dim + c] = round_bf16(o[c] * inverse);
    }
  }
}

struct Shape {
  std::int64_t heads, kv_heads, dim, tokens, window;
};

// max |replay - ref| / max |ref| over every output row of every head.
double replay_error(const Shape& shape, Fault fault) {
  Cell cell = small_cell(shape.heads, shape.dim, shape.tokens, DType::bfloat16, Phase::prefill);
  cell.options.set("kv_heads", shape.kv_heads);
  const AttentionInputs in = make_attention_inputs(cell, shape.tokens, 17);
  const std::int64_t group = shape.heads / shape.kv_heads;
  const SoftmaxPrefillCudaPlan plan =
      plan_softmax_prefill_cuda(shape.heads, group, shape.tokens, shape.dim, DType::bfloat16, shape.window);
  EXPECT_EQ(plan.path, SoftmaxPrefillPath::mma_bf16);
  std::vector<float> out(in.q.size(), std::numeric_limits<float>::quiet_NaN());
  double max_error = 0.0, max_ref = 0.0;
  for (std::int64_t bh = 0; bh < shape.heads; ++bh) {
    const std::int64_t kv = kv_source_head(bh, group);
    replay_head(plan, in.q_at(bh, 0), in.k_at(kv, 0), in.v_at(kv, 0), out.data() + bh * shape.tokens * shape.dim,
                fault);
    const MatrixD ref = softmax_attention_reference(in.head_matrix(in.q, bh, shape.tokens),
                                                    in.head_matrix(in.k, kv, shape.tokens),
                                                    in.head_matrix(in.v, kv, shape.tokens), shape.window);
    for (std::int64_t t = 0; t < shape.tokens; ++t) {
      for (std::int64_t c = 0; c < shape.dim; ++c) {
        const double got = out[static_cast<std::size_t>((bh * shape.tokens + t) * shape.dim + c)];
        if (!std::isfinite(got)) return INFINITY;
        max_error = std::max(max_error, std::abs(got - ref(t, c)));
        max_ref = std::max(max_ref, std::abs(ref(t, c)));
      }
    }
  }
  return max_error / max_ref;
}

// Causal and banded, multi-head and grouped, whole and partial tiles, a window narrower than a
// tile, one tile wide, wider, and covering the sequence.
const Shape kShapes[] = {
    {2, 2, 64, 1, 0},    {2, 2, 64, 64, 0},    {4, 2, 64, 200, 0},   {4, 1, 128, 130, 0}, {2, 2, 128, 257, 0},
    {4, 2, 64, 200, 1},  {4, 2, 64, 300, 50},  {2, 1, 128, 300, 64}, {4, 4, 64, 260, 100}, {2, 2, 128, 150, 1000},
};

TEST(SoftmaxKvMmaReplay, MatchesTheFp64ReferenceWithinTheBf16Tolerance) {
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(::testing::Message() << "heads " << shape.heads << " kv_heads " << shape.kv_heads << " d "
                                      << shape.dim << " L " << shape.tokens << " W " << shape.window);
    const double error = replay_error(shape, Fault::none);
    // Half the row check's bf16 tolerance: the bf16 outputs and weights alone, nothing systematic.
    EXPECT_LE(error, dtype_tolerance(DType::bfloat16) / 2);
  }
}

// The comparison above can fail: skipping a tile the band still reaches, or leaving the band edge
// unmasked, moves outputs far past the tolerance.
TEST(SoftmaxKvMmaReplay, WrongTileSkippingOrMaskingIsCaught) {
  EXPECT_GT(replay_error({4, 2, 64, 200, 0}, Fault::skip_one_tile_too_many), dtype_tolerance(DType::bfloat16));
  EXPECT_GT(replay_error({4, 2, 64, 300, 50}, Fault::skip_one_tile_too_many), dtype_tolerance(DType::bfloat16));
  EXPECT_GT(replay_error({4, 2, 64, 300, 50}, Fault::mask_only_the_diagonal), dtype_tolerance(DType::bfloat16));
  EXPECT_GT(replay_error({2, 1, 128, 300, 64}, Fault::mask_only_the_diagonal), dtype_tolerance(DType::bfloat16));
}

}  // namespace
}  // namespace arch_bench
