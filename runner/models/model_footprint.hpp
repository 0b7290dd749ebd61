#pragma once
// What a model's sequence-mixing layers hold per sequence, and how many sequences fit: the numbers a
// deployment is planned with (docs/design.md, "Model shapes").
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.hpp"
#include "runner/models/model_preset.hpp"

namespace arch_bench {

struct LayerFootprint {
  std::optional<std::int64_t> bytes_per_layer;  // one sequence, one layer; nullopt: no state model in this build
  // "mechanism": the mechanism's own state_bytes (what a run's rows report); "kv_formula": an
  // attention layer this build cannot run yet, 2 x min(L, window) x kv_heads x head_dim x dtype bytes.
  std::string source;
};

// One sequence's cache or state in one layer of this type after `length` tokens, the K/V cache
// stored in `dtype` (recurrent states are fp32 whatever the dtype, as the mechanisms keep them).
LayerFootprint layer_footprint(const ModelLayer& layer, std::int64_t length, DType dtype);
// Sum over the layer types of count x bytes_per_layer; nullopt when a layer type has no state model.
std::optional<std::int64_t> sequence_state_bytes(const ModelPreset& preset, std::int64_t length, DType dtype);
// parameter_count x the bytes of weight_dtype: the weights reserve taken off the memory first.
std::int64_t weights_bytes(const ModelPreset& preset);
// The most sequences whose caches/states fit in `memory_bytes` after `reserved_bytes`; 0 when the
// reserve alone does not fit or per_sequence_bytes is not positive.
std::int64_t max_batch(std::int64_t memory_bytes, std::int64_t reserved_bytes, std::int64_t per_sequence_bytes);

}  // namespace arch_bench
