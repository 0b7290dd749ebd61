// performer's CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/performer/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA only.
#include "mechanisms/performer/conformance.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/performer/options.hpp"

namespace arch_bench {

namespace {

std::int64_t nonpositive(const std::vector<float>& denominators) {
  return std::count_if(denominators.begin(), denominators.end(),
                       [](float d) { return !(d > 0.0f) || !std::isfinite(d); });
}

template <class T>
void performer_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, true);
  const Cell cell = attention_cell("performer", inputs, dtype, out.options, std::max(x.dk, x.dv));
  require_cuda_cell(cell);
  const PerformerFeatures kind = parse_performer_features(performer_feature_map_option().text(out.options)).value_or(PerformerFeatures::favor_plus);
  const PerformerShape shape{x.bh, x.dk, x.dv, performer_features_option().integer(out.options), kind};
  // W in fp32 as the adapter reads it, packed as the kernels take it.
  const std::vector<float> w = to_fp32_values(inputs.at("w"));
  std::vector<float> packed(static_cast<std::size_t>(performer_projection_floats(shape)));
  pack_performer_projection(slice_matrix(w, 0, shape.projection_rows(), x.dk), packed.data());
  const Buffer<float> projection = device_copy<float>(cuda, packed);

  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  Buffer<T> prefill = device_output<T>(cuda, x.v.size());
  const std::size_t states = static_cast<std::size_t>(x.bh * shape.features * x.dv);
  const std::size_t sums = static_cast<std::size_t>(x.bh * shape.features), heads = static_cast<std::size_t>(x.bh);
  Buffer<float> state(cuda.allocator(), states), normalizer(cuda.allocator(), sums), running_max(cuda.allocator(), heads);
  launch_performer_reset_state(x.bh, shape.features, x.dv, state.data(), normalizer.data(), running_max.data(),
                               cuda.stream());
  // bf16 prefills take the cells' path: stage 1 on tensor cores from the split W (cuda_plan.hpp).
  const PerformerPrefillPlan plan = plan_performer_prefill(
      shape, x.length, std::is_same_v<T, bf16> ? PerformerPrefillPath::tensor_core_bf16 : PerformerPrefillPath::simt);
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace.floats));
  Buffer<bf16> split;
  if (plan.prefill_path == PerformerPrefillPath::tensor_core_bf16) {
    split = Buffer<bf16>(cuda.allocator(), static_cast<std::size_t>(plan.tensor_core.split_elements()));
    launch_performer_split_projection(plan.tensor_core, projection.data(), split.data(), cuda.stream());
  }
  launch_performer_prefill<T>(plan, projection.data(), split.data(), q.data(), k.data(), v.data(), state.data(),
                              normalizer.data(), running_max.data(), prefill.data(), workspace.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));
  cuda.synchronize();
  const std::int64_t prefill_nonpositive =
      nonpositive(download<float>(cuda, workspace.data() + plan.workspace.denominators, x.bh * x.length));

  const Buffer<T> q_t = device_copy<T>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, x.bh, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, x.bh, x.length, x.dv));
  Buffer<T> decode = device_output<T>(cuda, x.v.size());
  Buffer<float> decode_state(cuda.allocator(), states), decode_normalizer(cuda.allocator(), sums),
      decode_max(cuda.allocator(), heads);
  Buffer<float> denominators = device_output<float>(cuda, static_cast<std::size_t>(x.bh * x.length));
  launch_performer_reset_state(x.bh, shape.features, x.dv, decode_state.data(), decode_normalizer.data(),
                               decode_max.data(), cuda.stream());
  const PerformerDecodePlan step = plan_performer_decode(shape);
  for (std::int64_t t = 0; t < x.length; ++t) {
    launch_performer_decode<T>(step, projection.data(), q_t.data() + t * x.bh * x.dk, k_t.data() + t * x.bh * x.dk,
                               v_t.data() + t * x.bh * x.dv, decode_state.data(), decode_normalizer.data(),
                               decode_max.data(), decode.data() + t * x.bh * x.dv, denominators.data() + t * x.bh,
                               cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dv));
  replace_state(out, "final_state", fetch(cuda, state), fetch(cuda, decode_state));
  replace_state(out, "final_normalizer", fetch(cuda, normalizer), fetch(cuda, decode_normalizer));
  replace_state(out, "final_running_max", fetch(cuda, running_max), fetch(cuda, decode_max));
  if (out.details.contains("nonpositive_denominators")) {
    out.details["nonpositive_denominators"]["prefill"] = prefill_nonpositive;
    out.details["nonpositive_denominators"]["decode"] = nonpositive(fetch(cuda, denominators));
  }
}

}  // namespace

void performer_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { performer_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
