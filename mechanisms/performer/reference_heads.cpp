#include "mechanisms/performer/reference_heads.hpp"

#include "core/stop_request.hpp"

namespace arch_bench {

std::vector<PerformerResult> performer_reference_heads(const AttentionInputs& inputs, std::int64_t tokens,
                                                       const PerformerShape& shape, const MatrixD& projection) {
  std::vector<PerformerResult> results(static_cast<std::size_t>(inputs.batch_heads));
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    // No exception may leave the parallel region: after a stop the remaining heads are skipped.
    if (stop_requested()) continue;
    results[bh] = performer_scan(inputs.head_matrix(inputs.q, bh, tokens), inputs.head_matrix(inputs.k, bh, tokens),
                                 inputs.head_matrix(inputs.v, bh, tokens), projection, shape.kind, shape.features,
                                 shape.stabilizer);
  }
  throw_if_stop_requested("checking the outputs against the fp64 reference");
  return results;
}

}  // namespace arch_bench
