#pragma once
// The fp64 check of a Mamba cell's outputs, one for the CPU cells (mechanism.cpp) and the CUDA cells
// (cuda_cells.cpp): the reference selective scan of each batch element against the cell's output.
// The reference is O(L d_inner N), as cheap as the scan itself, so every row is checked; the batch
// elements on the run's OpenMP team (check_heads_in_parallel).
#include <cstdint>
#include <vector>

#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/mamba/reference.hpp"

namespace arch_bench {

// A decode step's output [batch, channels] for token L = inputs.tokens - 1: row L of the reference
// over all L + 1 tokens, per batch element.
template <class T>
Accuracy check_mamba_decode(const MambaInputs& inputs, const T* out) {
  const std::int64_t length = inputs.tokens - 1, channels = inputs.channels;
  const MambaParametersD params = inputs.reference_parameters();
  return check_heads_in_parallel(inputs.batch, [&](std::int64_t b, ErrorAccumulator& errors) {
    const MambaReferenceResult ref = mamba_selective_scan(inputs.reference_sequence(b, length + 1), params);
    errors.add_row(out + b * channels, ref.outputs.row(length), channels);
  });
}

// A prefill's output, channel-major [batch, channels, tokens] like the inputs, against every row of
// the reference.
template <class T>
Accuracy check_mamba_prefill(const MambaInputs& inputs, const T* out) {
  const std::int64_t tokens = inputs.tokens, channels = inputs.channels;
  const MambaParametersD params = inputs.reference_parameters();
  return check_heads_in_parallel(inputs.batch, [&](std::int64_t b, ErrorAccumulator& errors) {
    const MambaReferenceResult ref = mamba_selective_scan(inputs.reference_sequence(b, tokens), params);
    std::vector<T> gathered(static_cast<std::size_t>(channels));
    for (std::int64_t t = 0; t < tokens; ++t) {
      // The reference row t holds every channel of token t.
      for (std::int64_t c = 0; c < channels; ++c) gathered[c] = out[(b * channels + c) * tokens + t];
      errors.add_row(gathered.data(), ref.outputs.row(t), channels);
    }
  });
}

}  // namespace arch_bench
