#include "runner/models/model_footprint.hpp"

#include <algorithm>

#include "core/cell.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

LayerFootprint layer_footprint(const ModelLayer& layer, std::int64_t length, DType dtype) {
  if (!cannot_run_yet(layer)) {
    const Mechanism* mechanism = find_mechanism(layer.mechanism);
    const Cell cell{layer.mechanism, Phase::decode, length, 1, layer.heads, layer.head_dim, dtype,
                    layer_options(layer)};
    return {mechanism->state_bytes(cell), "mechanism"};
  }
  if (is_attention_layer(layer)) {
    // The K/V cache is the same quantity whichever kernel reads it: K and V, one row per token kept
    // (all of them, or the last `window`), per K/V head.
    const std::int64_t tokens = layer.window ? std::min(length, *layer.window) : length;
    return {checked_product(std::int64_t{2}, tokens, layer.kv_heads, layer.head_dim,
                            static_cast<std::int64_t>(dtype_bytes(dtype))),
            "kv_formula"};
  }
  return {std::nullopt, "none"};
}

std::optional<std::int64_t> sequence_state_bytes(const ModelPreset& preset, std::int64_t length, DType dtype) {
  std::int64_t total = 0;
  for (const ModelLayer& layer : preset.layers) {
    const LayerFootprint footprint = layer_footprint(layer, length, dtype);
    if (!footprint.bytes_per_layer) return std::nullopt;
    total = checked_add(total, checked_mul(layer.count, *footprint.bytes_per_layer));
  }
  return total;
}

std::int64_t weights_bytes(const ModelPreset& preset) {
  return checked_mul(preset.parameter_count, weight_dtype_bytes(preset.weight_dtype));
}

std::int64_t max_batch(std::int64_t memory_bytes, std::int64_t reserved_bytes, std::int64_t per_sequence_bytes) {
  if (per_sequence_bytes <= 0 || memory_bytes <= reserved_bytes) return 0;
  return (memory_bytes - reserved_bytes) / per_sequence_bytes;
}

}  // namespace arch_bench
