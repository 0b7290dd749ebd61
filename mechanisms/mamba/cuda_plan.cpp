#include "mechanisms/mamba/cuda_plan.hpp"
#include "mechanisms/mamba/options.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/checked_size.hpp"
#include "mechanisms/common/cuda_launch_limits.hpp"

namespace arch_bench {

MambaDecodePlan plan_mamba_decode(const MambaShape& shape) {
  MambaDecodePlan plan;
  plan.rows = shape.rows();
  plan.channels = static_cast<int>(shape.channels);
  plan.state_size = static_cast<int>(shape.state_size);
  // The smallest power of two >= N, at most a warp: N = 16 gives 16 lanes (two rows per warp).
  int lanes = 1;
  while (lanes < 32 && lanes < shape.state_size) lanes *= 2;
  plan.lanes = lanes;
  plan.blocks = ceil_div(checked_mul(plan.rows, lanes), plan.threads);
  return plan;
}

std::int64_t mamba_prefill_segments(std::int64_t row_blocks, std::int64_t chunks, int multiprocessors,
                                    int blocks_per_sm) {
  if (multiprocessors <= 0 || row_blocks < 1 || chunks < 2) return 1;
  const std::int64_t resident =
      static_cast<std::int64_t>(blocks_per_sm) * std::min(multiprocessors, kMambaSplitMaxMultiprocessors);
  const std::int64_t segments = std::min(chunks, resident / row_blocks);
  if (segments < 2) return 1;
  const std::int64_t per_segment = ceil_div(chunks, segments);
  return 2 * per_segment < chunks ? ceil_div(chunks, per_segment) : 1;
}

MambaPrefillPlan plan_mamba_prefill(const MambaShape& shape, std::int64_t tokens, int multiprocessors,
                                    MambaScanKernel kernel) {
  MambaPrefillPlan plan;
  plan.batch = shape.batch;
  plan.channels = static_cast<int>(shape.channels);
  plan.state_size = static_cast<int>(shape.state_size);
  plan.tokens = tokens;
  plan.kernel = kernel;
  const bool entry = kernel != MambaScanKernel::lane;
  if (entry && !mamba_entry_applies(shape.state_size)) {
    throw std::invalid_argument("plan_mamba_prefill: the entry kernel takes N 8 or 16, not " +
                                std::to_string(shape.state_size));
  }
  plan.threads = entry ? mamba_entry_threads(plan.state_size) : kMambaScanThreads;
  plan.channels_per_block = entry ? mamba_entry_channels_per_block(plan.state_size) : kMambaScanWarps;
  plan.channel_groups = ceil_div(shape.channels, plan.channels_per_block);
  plan.chunks = ceil_div(tokens, kMambaScanChunk);
  plan.shared_bytes = entry ? mamba_entry_shared_bytes(plan.state_size)
                            : mamba_scan_shared_bytes(static_cast<int>(sizeof(float)), plan.state_size);
  const std::int64_t row_blocks = checked_mul(shape.batch, plan.channel_groups);
  const int blocks_per_sm = entry ? kMambaEntrySplitBlocksPerSm : kMambaScanMinBlocksPerSm;
  return split_mamba_prefill(plan, mamba_prefill_segments(row_blocks, plan.chunks, multiprocessors, blocks_per_sm));
}

MambaPrefillPlan split_mamba_prefill(MambaPrefillPlan plan, std::int64_t segments) {
  segments = std::clamp<std::int64_t>(segments, 1, std::max<std::int64_t>(1, plan.chunks));
  const std::int64_t per_segment = segments == 1 ? plan.chunks : ceil_div(plan.chunks, segments);
  plan.segments = per_segment == 0 ? 1 : ceil_div(plan.chunks, per_segment);
  plan.segment_tokens = checked_mul(per_segment, kMambaScanChunk);
  const std::int64_t row_blocks = checked_mul(plan.batch, plan.channel_groups);
  plan.blocks = checked_mul(row_blocks, plan.segments);
  const bool split = plan.segments > 1;
  const std::int64_t rows = checked_mul(plan.batch, plan.channels);
  plan.map_blocks = split ? checked_mul(row_blocks, plan.segments - 1) : 0;
  plan.combine_blocks = split ? ceil_div(checked_mul(rows, plan.state_size), kMambaCombineThreads) : 0;
  plan.workspace_floats = split ? checked_product(rows, plan.segments, plan.state_size + 1) : 0;
  return plan;
}

std::int64_t mamba_prefill_workspace_bytes(const MambaPrefillPlan& plan) {
  return checked_mul(plan.workspace_floats, static_cast<std::int64_t>(sizeof(float)));
}

std::int64_t mamba_prefill_cuda_workspace_bytes(const MambaShape& shape, std::int64_t tokens, MambaScanKernel kernel) {
  return mamba_prefill_workspace_bytes(plan_mamba_prefill(shape, tokens, kMambaSplitMaxMultiprocessors, kernel));
}

std::int64_t mamba_prefill_min_bytes(const MambaShape& shape, std::int64_t tokens, int element_bytes) {
  const std::int64_t e = element_bytes, f = static_cast<std::int64_t>(sizeof(float));
  return checked_sum(checked_product(4, shape.rows(), tokens, e), checked_product(2, shape.batch, tokens, shape.state_size, e),
                     checked_product(2, shape.rows(), shape.state_size, f),
                     checked_product(f, shape.channels, shape.state_size + 2));
}

std::optional<MambaScanKernel> mamba_scan_kernel_of(const Cell& cell) {
  const std::string choice = mamba_scan_kernel_option().text(cell.options);
  const bool applies = mamba_entry_applies(mamba_state_size_option().integer(cell.options));
  if (choice == "lane") return MambaScanKernel::lane;
  // auto is the entry kernel where it applies: by the SASS counts (docs/gpu-guide.md) it issues 10.2
  // slots per element at N 16 (13.1 at N 8) against the warp scan's 15. Neither has run on a GPU
  // yet; `--scan-kernel entry,lane` measures both, and the measurement decides.
  if (choice == "auto") return applies ? MambaScanKernel::entry : MambaScanKernel::lane;
  if (!applies) return std::nullopt;
  return MambaScanKernel::entry;
}

std::string mamba_scan_kernel_name(MambaScanKernel kernel) {
  switch (kernel) {
    case MambaScanKernel::entry:
      return "entry";
    case MambaScanKernel::lane:
      break;
  }
  return "lane";
}

std::string mamba_gpu_kernel_name(const Cell& cell) {
  const std::optional<MambaScanKernel> kernel = mamba_scan_kernel_of(cell);
  if (!kernel) return "none (" + mamba_scan_kernel_option().text(cell.options) + " does not take this N)";
  std::string name = "prefill " + mamba_scan_kernel_name(*kernel);
  const std::string n = std::to_string(mamba_state_size_option().integer(cell.options));
  if (*kernel == MambaScanKernel::entry) {
    name += " (N " + n + ")";
  } else {
    name += " (warp scan)";
  }
  if (cell.phase == Phase::decode) return "decode (context " + name + ")";
  return name;
}

std::optional<std::string> mamba_cuda_unsupported(const Cell& cell) {
  const std::int64_t n = mamba_state_size_option().integer(cell.options);
  if (n < 1 || n > kMambaMaxStateSize) {
    return "the CUDA kernels of mamba take state_size (N) 1.." + std::to_string(kMambaMaxStateSize);
  }
  const std::optional<MambaScanKernel> kernel = mamba_scan_kernel_of(cell);
  if (!kernel) {
    return "mamba's scan_kernel " + mamba_scan_kernel_option().text(cell.options) +
           " takes state_size (N) 8 or 16 (auto or lane take any N)";
  }
  const MambaShape shape{cell.batch, checked_mul(cell.heads, cell.head_dim), n};
  if (shape.rows() < 1) return "the CUDA kernels of mamba need batch * d_inner >= 1";
  if (shape.channels > std::numeric_limits<std::int32_t>::max()) return "d_inner exceeds 2^31 - 1";
  if (cell.sequence_length < 0) return "sequence_length must be >= 0";
  if (plan_mamba_decode(shape).blocks > kCudaMaxGridX) return "batch * d_inner exceeds the CUDA grid limit";
  const MambaPrefillPlan prefill = plan_mamba_prefill(shape, cell.sequence_length, 0, *kernel);
  // Unsplit; a split grid fills its resident slots once (mamba_prefill_segments: 2 blocks per SM for
  // either kernel), far below the limit.
  if (prefill.blocks > kCudaMaxGridX) return "batch * d_inner exceeds the CUDA grid limit (2^31 - 1 blocks)";
  if (prefill.shared_bytes > kCudaDefaultSharedBytes) return "mamba scan shared memory exceeds 48 KiB";
  return std::nullopt;
}

}  // namespace arch_bench
