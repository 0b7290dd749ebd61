#include "mechanisms/common/chunk_scalar_decay_plan.hpp"

#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/checked_size.hpp"
#include "mechanisms/common/chunk_pass_grid.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"
#include "mechanisms/common/smem_layout.hpp"

namespace arch_bench {

bool chunk_scalar_decay_supports(std::int64_t dk, std::int64_t dv) {
  const auto fits = [](std::int64_t d) {
    return d >= kScalarDecayFragment && d <= kScalarDecayMaxDim && d % kScalarDecayFragment == 0;
  };
  return fits(dk) && fits(dv);
}

namespace {

// The tiles a warp's fragments can carry for this dk, widest first, dividing dv.
std::vector<int> fused_tiles(std::int64_t dk, std::int64_t dv) {
  std::vector<int> tiles;
  for (const int tile : kScalarDecayFusedTiles) {
    if (dv % tile == 0 && dk * tile <= kScalarDecayFusedMaxTileElements) tiles.push_back(tile);
  }
  return tiles;
}

std::int64_t resident_fused_blocks(int multiprocessors) {
  return std::int64_t{kScalarDecayFusedMinBlocksPerSm} * multiprocessors;
}

}  // namespace

int scalar_decay_fused_column_tile(std::int64_t batch_heads, std::int64_t dk, std::int64_t dv, int multiprocessors) {
  const std::vector<int> tiles = fused_tiles(dk, dv);  // never empty: 16 divides dv, 16 x 128 <= the cap
  if (multiprocessors <= 0) return tiles.front();
  for (auto tile = tiles.rbegin(); tile != tiles.rend(); ++tile) {
    if (checked_mul(batch_heads, dv / *tile) <= resident_fused_blocks(multiprocessors)) return *tile;
  }
  return tiles.front();
}

ScalarDecayStatePass chunk_scalar_decay_state_pass(ScalarDecayStatePassChoice choice, std::int64_t batch_heads,
                                                   std::int64_t dk, std::int64_t dv, int multiprocessors) {
  switch (choice) {
    case ScalarDecayStatePassChoice::fused:
      return ScalarDecayStatePass::fused;
    case ScalarDecayStatePassChoice::three_kernel:
      return ScalarDecayStatePass::three_kernel;
    case ScalarDecayStatePassChoice::automatic:
      break;
  }
  // Each fused block is a chain of `chunks` dependent steps: fewer blocks than SMs leave SMs idle
  // and the chain latency-bound; a second wave repeats the whole chain (docs/gpu-guide.md).
  if (multiprocessors <= 0) return ScalarDecayStatePass::three_kernel;
  const std::int64_t blocks = checked_mul(batch_heads, dv / scalar_decay_fused_column_tile(batch_heads, dk, dv, multiprocessors));
  return blocks >= multiprocessors && blocks <= resident_fused_blocks(multiprocessors) ? ScalarDecayStatePass::fused
                                                                                      : ScalarDecayStatePass::three_kernel;
}

const char* scalar_decay_state_pass_name(ScalarDecayStatePass pass) {
  return pass == ScalarDecayStatePass::fused ? "fused" : "three_kernel";
}

std::string scalar_decay_state_pass_description(const ChunkScalarDecayPlan& plan, ScalarDecayStatePassChoice choice,
                                                int multiprocessors) {
  const bool fused = plan.state_pass == ScalarDecayStatePass::fused;
  const std::string blocks = std::to_string(plan.fused_blocks) + " blocks";
  std::string text = fused ? "fused state pass (" + blocks + " of " + std::to_string(plan.fused_column_tile) + " columns, "
                           : std::string("three-kernel state pass (");
  if (choice != ScalarDecayStatePassChoice::automatic) return text + "forced)";
  if (multiprocessors <= 0) return text + "auto: no device known)";
  const std::string sms = std::to_string(multiprocessors) + " SMs";
  if (fused) return text + "auto: one wave on " + sms + ")";
  if (plan.fused_blocks < multiprocessors) return text + "auto: fused would be " + blocks + " < " + sms + ")";
  return text + "auto: fused would be " + blocks + " > one wave of " +
         std::to_string(resident_fused_blocks(multiprocessors)) + " on " + sms + ")";
}

std::string scalar_decay_prefill_kernel_name(const ChunkScalarDecayPlan& plan, ScalarDecayStatePassChoice choice,
                                             int multiprocessors) {
  return "prefill chunkwise bf16 tensor cores, " + scalar_decay_state_pass_description(plan, choice, multiprocessors);
}

ChunkScalarDecayPlan plan_chunk_scalar_decay(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                             std::int64_t dv, ScalarDecayStatePassChoice choice,
                                             int multiprocessors) {
  if (!chunk_scalar_decay_supports(dk, dv)) {
    throw std::invalid_argument("the chunkwise scalar-decay prefill takes dk and dv multiples of 16 up to " +
                                std::to_string(kScalarDecayMaxDim) + ", not " + std::to_string(dk) + " x " +
                                std::to_string(dv));
  }
  if (batch_heads < 0 || tokens < 0) throw std::invalid_argument("batch_heads and tokens must be >= 0");
  ChunkScalarDecayPlan plan;
  plan.dk = static_cast<int>(dk);
  plan.dv = static_cast<int>(dv);
  place_chunk_state_grid(plan, batch_heads, tokens, kScalarDecayChunk, dk * dv);
  plan.ld_k = plan.dk + kScalarDecayBf16Pad;
  plan.ld_v = plan.dv + kScalarDecayBf16Pad;
  plan.ld_p = kScalarDecayChunk + kScalarDecayBf16Pad;
  plan.ld_acc = (plan.dv > kScalarDecayChunk ? plan.dv : kScalarDecayChunk) + kScalarDecayFloatPad;

  constexpr std::size_t kBf16 = 2, kFloat = 4, kRows = kScalarDecayChunk;
  const auto ld = [](int x) { return static_cast<std::size_t>(x); };
  std::size_t end = 0;
  plan.state_layout.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  plan.state_layout.v = place_shared_region(end, kRows * ld(plan.ld_v) * kBf16);
  plan.state_layout.decay = place_shared_region(end, kRows * kFloat);
  plan.state_layout.u =
      place_shared_region(end, std::size_t{kScalarDecayThreads / 32} * kScalarDecayFragment * kScalarDecayFragment * kFloat);
  plan.state_layout.bytes = end;

  end = 0;
  plan.output_layout.q = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  plan.output_layout.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  plan.output_layout.v = place_shared_region(end, kRows * ld(plan.ld_v) * kBf16);
  plan.output_layout.s = place_shared_region(end, ld(plan.dk) * ld(plan.ld_v) * kBf16);
  plan.output_layout.p = place_shared_region(end, kRows * ld(plan.ld_p) * kBf16);
  plan.output_layout.acc = place_shared_region(end, kRows * ld(plan.ld_acc) * kFloat);
  plan.output_layout.decay = place_shared_region(end, kRows * kFloat);
  plan.output_layout.bytes = end;

  plan.state_pass = chunk_scalar_decay_state_pass(choice, batch_heads, dk, dv, multiprocessors);
  plan.fused_column_tile = scalar_decay_fused_column_tile(batch_heads, dk, dv, multiprocessors);
  plan.fused_column_tiles = plan.dv / plan.fused_column_tile;
  plan.fused_blocks = checked_mul(batch_heads, std::int64_t{plan.fused_column_tiles});
  plan.ld_fused_v = plan.fused_column_tile + kScalarDecayBf16Pad;
  end = 0;
  plan.fused_layout.k = place_shared_region(end, kRows * ld(plan.ld_k) * kBf16);
  plan.fused_layout.v = place_shared_region(end, kRows * ld(plan.ld_fused_v) * kBf16);
  plan.fused_layout.decay = place_shared_region(end, 2 * kRows * kFloat);
  plan.fused_layout.stage =
      place_shared_region(end, std::size_t{kScalarDecayThreads / 32} * kScalarDecayFragment * kScalarDecayFragment * kFloat);
  plan.fused_layout.bytes = end;

  plan.workspace_state_elements = checked_product(batch_heads, plan.chunks, dk, dv) / 2;  // dk * dv is even
  // The fused pass reads each chunk's b_last from its own shared memory: no chunk_log_decay.
  plan.workspace_decay_elements = plan.state_pass == ScalarDecayStatePass::fused ? 0 : plan.state_blocks;
  checked_product(4, checked_add(plan.workspace_state_elements, plan.workspace_decay_elements));
  return plan;
}

std::optional<std::string> chunk_scalar_decay_unlaunchable(const ChunkScalarDecayPlan& plan) {
  if (plan.state_blocks > kCudaMaxGridX || plan.prefix_blocks > kCudaMaxGridX || plan.fused_blocks > kCudaMaxGridX) {
    return "batch * heads * ceil(sequence_length / 64) exceeds the CUDA grid limit (2^31 - 1 blocks)";
  }
  if (plan.max_shared_bytes() > kScalarDecayMaxSharedBytes) {
    return "the chunkwise prefill exceeds 227 KiB of shared memory";
  }
  return std::nullopt;
}

std::int64_t chunk_scalar_decay_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv, ScalarDecayStatePassChoice choice) {
  if (!chunk_scalar_decay_supports(dk, dv) || batch_heads < 0 || tokens < 0) return 0;
  const std::int64_t chunks = ceil_div(tokens, kScalarDecayChunk);
  const std::int64_t decays = choice == ScalarDecayStatePassChoice::fused ? 0 : checked_product(batch_heads, chunks);
  return checked_product(4, checked_add(checked_product(batch_heads, chunks, dk, dv) / 2, decays));
}

}  // namespace arch_bench
