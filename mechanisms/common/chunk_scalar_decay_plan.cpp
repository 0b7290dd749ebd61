#include "mechanisms/common/chunk_scalar_decay_plan.hpp"

#include <stdexcept>
#include <string>

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

ChunkScalarDecayPlan plan_chunk_scalar_decay(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                             std::int64_t dv) {
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

  plan.workspace_state_elements = checked_product(batch_heads, plan.chunks, dk, dv) / 2;  // dk * dv is even
  plan.workspace_decay_elements = plan.state_blocks;
  checked_product(4, checked_add(plan.workspace_state_elements, plan.workspace_decay_elements));
  return plan;
}

std::optional<std::string> chunk_scalar_decay_unlaunchable(const ChunkScalarDecayPlan& plan) {
  if (plan.state_blocks > kCudaMaxGridX || plan.prefix_blocks > kCudaMaxGridX) {
    return "batch * heads * ceil(sequence_length / 64) exceeds the CUDA grid limit (2^31 - 1 blocks)";
  }
  if (plan.max_shared_bytes() > kScalarDecayMaxSharedBytes) {
    return "the chunkwise prefill exceeds 227 KiB of shared memory";
  }
  return std::nullopt;
}

std::int64_t chunk_scalar_decay_workspace_bytes(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dk,
                                                std::int64_t dv) {
  if (!chunk_scalar_decay_supports(dk, dv) || batch_heads < 0 || tokens < 0) return 0;
  const std::int64_t chunks = ceil_div(tokens, kScalarDecayChunk);
  return checked_product(4, checked_add(checked_product(batch_heads, chunks, dk, dv) / 2, checked_product(batch_heads, chunks)));
}

}  // namespace arch_bench
