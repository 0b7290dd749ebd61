#pragma once
// A CUDA prefill cell's chunkwise scalar-decay plan (chunk_scalar_decay_plan.hpp) and the device
// workspace the plan names, drawn from the cell's allocator at prepare time: the peak counts it and
// run() allocates nothing. Empty (no plan, no buffers) for a cell whose prefill runs its recurrence.
#include <cstddef>
#include <optional>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"
#include "mechanisms/common/chunk_scalar_decay_plan.hpp"

namespace arch_bench {

struct ChunkScalarDecayWorkspace {
  ChunkScalarDecayWorkspace() = default;
  ChunkScalarDecayWorkspace(const ChunkScalarDecayPlan& chunked, Allocator& allocator)
      : plan(chunked),
        chunk_states(allocator, static_cast<std::size_t>(chunked.workspace_state_elements)),
        chunk_log_decay(allocator, static_cast<std::size_t>(chunked.workspace_decay_elements)) {}

  // The workspace's buffers after the cell's own (cell_spans.hpp); none when empty.
  void add_spans(std::vector<ByteSpan>& spans) const {
    if (!plan) return;
    spans.push_back(chunk_states.byte_span());
    if (chunk_log_decay.size() > 0) spans.push_back(chunk_log_decay.byte_span());  // none when fused
  }

  std::optional<ChunkScalarDecayPlan> plan;  // set: the bf16 prefill runs chunkwise on tensor cores
  Buffer<float> chunk_states, chunk_log_decay;
};

}  // namespace arch_bench
