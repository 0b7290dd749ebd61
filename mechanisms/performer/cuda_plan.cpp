#include "mechanisms/performer/cuda_plan.hpp"
#include "mechanisms/performer/options.hpp"

#include <algorithm>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/smem_layout.hpp"
#include "mechanisms/common/tensor_core_prefill.hpp"

namespace arch_bench {

namespace {

PerformerShape shape_of(const Cell& cell) {
  return {cell.batch_heads(), cell.head_dim, cell.head_dim, performer_features_option().integer(cell.options),
          parse_performer_features(performer_feature_map_option().text(cell.options)).value_or(PerformerFeatures::favor_plus),
          parse_performer_stabilizer(favor_stabilizer_option().text(cell.options)).value_or(PerformerStabilizer::causal)};
}
}  // namespace

PerformerDecodePlan plan_performer_decode(const PerformerShape& shape) {
  PerformerDecodePlan plan;
  plan.blocks = shape.batch_heads;
  plan.dk = static_cast<int>(shape.dk);
  plan.dv = static_cast<int>(shape.dv);
  plan.features = static_cast<int>(shape.features);
  plan.projection_rows = static_cast<int>(shape.projection_rows());
  plan.kind = shape.kind;
  // As many row groups as fit in the block, never more than there are rows of S.
  plan.row_groups = static_cast<int>(std::clamp<std::int64_t>(kPerformerCudaThreads / std::max<std::int64_t>(shape.dv, 1),
                                                              1, std::max<std::int64_t>(shape.features, 1)));
  plan.shared_bytes = sizeof(float) * static_cast<std::size_t>(2 * shape.dk + 2 * shape.features + shape.dv +
                                                               plan.row_groups * shape.dv + kPerformerReduceFloats);
  return plan;
}

PerformerTensorCoreFeaturePlan plan_performer_tensor_core_features(const PerformerShape& shape, std::int64_t tokens) {
  constexpr int kF = kPerformerTensorCoreFragment;
  PerformerTensorCoreFeaturePlan plan;
  plan.tokens = tokens;
  plan.token_tiles = ceil_div(tokens, kPerformerTensorCoreTokens);
  plan.blocks = checked_product(shape.batch_heads, plan.token_tiles, 2);
  plan.dk = static_cast<int>(shape.dk);
  plan.projection_rows = static_cast<int>(shape.projection_rows());
  plan.features = static_cast<int>(shape.features);
  plan.kind = shape.kind;
  plan.dk_padded = static_cast<int>(ceil_div(shape.dk, kF) * kF);
  plan.columns_padded = static_cast<int>(ceil_div(shape.projection_rows(), kF) * kF);
  plan.ld_x = plan.dk_padded + kPerformerTensorCoreRowPad;
  std::size_t end = 0;
  plan.x = place_shared_region(end, sizeof(std::uint16_t) * kPerformerTensorCoreTokens * plan.ld_x);
  plan.stage = place_shared_region(end, sizeof(float) * kPerformerTensorCoreWarps * kF * kF);
  plan.partial = place_shared_region(end, sizeof(float) * kPerformerTensorCoreWarps * kPerformerTensorCoreTokens);
  plan.top = place_shared_region(end, sizeof(float) * kPerformerTensorCoreTokens);
  plan.half_norm = place_shared_region(end, sizeof(float) * kPerformerTensorCoreTokens);
  plan.shared_bytes = end;
  return plan;
}

PerformerTensorCoreStateLayout performer_tensor_core_state_layout() {
  constexpr std::size_t bf16_tile = sizeof(std::uint16_t) * kChunkTile * kPerformerBf16Ld;
  PerformerTensorCoreStateLayout at;
  std::size_t end = 0;
  at.k = place_shared_region(end, bf16_tile);
  at.k_low = place_shared_region(end, bf16_tile);
  at.v = place_shared_region(end, bf16_tile);
  at.stage = place_shared_region(end, sizeof(float) * kPerformerTensorCoreWarps * kPerformerTensorCoreFragment *
                                          kPerformerTensorCoreFragment);
  at.weights = place_shared_region(end, sizeof(float) * kChunkTile);
  at.bytes = end;
  return at;
}

PerformerTensorCoreOutputLayout performer_tensor_core_output_layout() {
  constexpr std::size_t step_tile = sizeof(std::uint16_t) * kChunkTile * kPerformerStepLd;
  constexpr std::size_t row = sizeof(float) * kChunkTile;
  PerformerTensorCoreOutputLayout at;
  std::size_t end = 0;
  at.q = place_shared_region(end, step_tile);
  at.k = place_shared_region(end, step_tile);
  at.s = place_shared_region(end, sizeof(std::uint16_t) * kPerformerTensorCoreStep * kPerformerBf16Ld);
  at.s_low = place_shared_region(end, sizeof(std::uint16_t) * kPerformerTensorCoreStep * kPerformerBf16Ld);
  at.loop_end = end;
  // The scores and the outputs exist only after the loop: they reuse its regions.
  std::size_t after_loop = 0;
  at.a = place_shared_region(after_loop, sizeof(float) * kChunkTile * kPerformerFloatLd);
  end = std::max(end, after_loop);
  at.p = place_shared_region(end, sizeof(std::uint16_t) * kChunkTile * kPerformerBf16Ld);
  at.v = place_shared_region(end, sizeof(std::uint16_t) * kChunkTile * kPerformerBf16Ld);
  at.z = place_shared_region(end, sizeof(float) * kPerformerTensorCoreStep);
  at.row_scale = place_shared_region(end, row);
  at.row_max = place_shared_region(end, row);
  at.key_scale = place_shared_region(end, row);
  at.denominator = place_shared_region(end, row);
  at.bytes = end;
  return at;
}

PerformerPrefillPlan plan_performer_prefill(const PerformerShape& shape, std::int64_t tokens,
                                            PerformerPrefillPath prefill_path) {
  PerformerPrefillPlan plan;
  plan.batch_heads = shape.batch_heads;
  plan.tokens = tokens;
  plan.dk = static_cast<int>(shape.dk);
  plan.dv = static_cast<int>(shape.dv);
  plan.features = static_cast<int>(shape.features);
  plan.projection_rows = static_cast<int>(shape.projection_rows());
  plan.kind = shape.kind;
  const std::int64_t m = shape.features, bh = shape.batch_heads;
  static_cast<ChunkwiseGrid&>(plan) = plan_chunkwise_grid(bh, tokens, m, shape.dv);
  plan.token_tiles = ceil_div(tokens, kPerformerFeatureTokens);
  plan.feature_blocks = checked_product(bh, plan.token_tiles, 2);
  plan.max_blocks = bh;
  plan.feature_shared_bytes = sizeof(float) * static_cast<std::size_t>(performer_feature_shared_floats(plan.dk));
  plan.state_shared_bytes = sizeof(float) * ChunkStateSharedLayout::floats;
  plan.output_shared_bytes = sizeof(float) * PerformerOutputSharedLayout::floats;
  plan.prefill_path = prefill_path;
  if (prefill_path == PerformerPrefillPath::tensor_core_bf16) {
    plan.tensor_core = plan_performer_tensor_core_features(shape, tokens);
    plan.tensor_core_state = performer_tensor_core_state_layout();
    plan.state_scan_blocks = checked_product(bh, plan.key_tiles, plan.value_tiles);
    plan.tensor_core_output = performer_tensor_core_output_layout();
  }
  // Sizes follow user-given lengths: every product is checked (SizeOverflow rather than a wrap).
  PerformerPrefillWorkspace& w = plan.workspace;
  const std::int64_t features = checked_product(bh, tokens, m);
  const std::int64_t per_token = checked_mul(bh, tokens);
  w.query_features = 0;
  if (prefill_path == PerformerPrefillPath::tensor_core_bf16) {
    // bf16 planes: two elements a float, each plane rounded up to 16 bytes (4 floats).
    const std::int64_t plane = ceil_div(features, 8) * 4;
    w.key_features = plane;
    w.key_features_low = checked_add(w.key_features, plane);
    w.key_scale = checked_add(w.key_features_low, plane);
  } else {
    w.key_features = features;
    w.key_scale = checked_add(w.key_features, features);
  }
  w.row_max = checked_add(w.key_scale, per_token);
  w.carried_max = checked_add(w.row_max, per_token);
  w.chunk_states = checked_add(w.carried_max, bh);
  w.chunk_sums = checked_add(w.chunk_states, checked_product(bh, plan.chunks, m, shape.dv));
  w.denominators = checked_add(w.chunk_sums, checked_product(bh, plan.chunks, m));
  w.floats = checked_add(w.denominators, per_token);
  return plan;
}

std::int64_t PerformerPrefillPlan::workspace_bytes() const { return checked_mul(workspace.floats, 4); }

PerformerPrefillPath performer_cuda_prefill_path(const Cell& cell) {
  // Every head width and feature count the CUDA kernels take fits the tensor-core kernels (dk and n
  // are padded to 16, m and dv to the 64-wide tiles; stage 1's shared memory stays under 48 KiB up
  // to dk 256, the state scan (stages 3 + 4) and stage 5 take a fixed 35 and 38 KiB).
  return prefill_runs_on_tensor_cores(cell, true) ? PerformerPrefillPath::tensor_core_bf16 : PerformerPrefillPath::simt;
}

std::string performer_gpu_kernel_name(const Cell& cell) {
  if (cell.phase == Phase::decode) return "decode simt";
  return performer_cuda_prefill_path(cell) == PerformerPrefillPath::tensor_core_bf16
             ? kPerformerTensorCoreKernelName
             : "prefill simt";
}

std::int64_t performer_cuda_workspace_bytes(const Cell& cell) {
  if (cell.phase == Phase::decode) return checked_mul(cell.batch_heads(), 4);
  const PerformerPrefillPlan plan =
      plan_performer_prefill(shape_of(cell), cell.sequence_length, performer_cuda_prefill_path(cell));
  if (plan.prefill_path == PerformerPrefillPath::simt) return plan.workspace_bytes();
  return checked_add(plan.workspace_bytes(), checked_mul(plan.tensor_core.split_elements(), 2));
}

std::optional<std::string> performer_cuda_unsupported(const Cell& cell) {
  if (cell.head_dim < 1 || cell.head_dim > kPerformerMaxDim) {
    return "the CUDA kernels of performer take head_dim 1.." + std::to_string(kPerformerMaxDim);
  }
  if (performer_features_option().integer(cell.options) < 1 || performer_features_option().integer(cell.options) > kPerformerMaxFeatures) {
    return "the CUDA kernels of performer take features (m) 1.." + std::to_string(kPerformerMaxFeatures);
  }
  if (cell.batch_heads() < 1) return "the CUDA kernels of performer need batch * heads >= 1";
  if (parse_performer_stabilizer(favor_stabilizer_option().text(cell.options)) == PerformerStabilizer::published) {
    return "the CUDA kernels of performer implement the causal favor stabiliser only (--favor-stabilizer causal); "
           "the published one runs on the CPU";
  }
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  const PerformerShape shape = shape_of(cell);
  const PerformerDecodePlan decode = plan_performer_decode(shape);
  if (decode.blocks > kCudaMaxGridX) return "batch * heads exceeds the CUDA grid limit (2^31 - 1 blocks)";
  if (decode.shared_bytes > kCudaDefaultSharedBytes) return "performer decode shared memory exceeds 48 KiB";
  // A decode cell builds its context with the prefill, so both must fit.
  if (cell.sequence_length == 0) return std::nullopt;
  const PerformerPrefillPlan plan = plan_performer_prefill(shape, cell.sequence_length, performer_cuda_prefill_path(cell));
  if (std::max({plan.feature_blocks, plan.state_blocks, plan.prefix_blocks, plan.output_blocks, plan.tensor_core.blocks}) >
      kCudaMaxGridX) {
    return "batch * heads * chunks exceeds the CUDA grid limit (2^31 - 1 blocks); use a shorter sequence or "
           "fewer heads";
  }
  if (plan.feature_shared_bytes > kCudaDefaultSharedBytes) return "performer feature shared memory exceeds 48 KiB";
  if (std::max({plan.tensor_core.shared_bytes, plan.tensor_core_state.bytes, plan.tensor_core_output.bytes}) >
      kCudaDefaultSharedBytes) {
    return "performer tensor-core shared memory exceeds 48 KiB";
  }
  return std::nullopt;
}

}  // namespace arch_bench
