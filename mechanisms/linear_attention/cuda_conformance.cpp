// linear_attention's CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/linear_attention/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA only.
#include "mechanisms/linear_attention/conformance.hpp"

#include <algorithm>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/linear_attention/cuda.hpp"
#include "mechanisms/linear_attention/options.hpp"

namespace arch_bench {

namespace {

template <class T>
void linear_attention_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out,
                              CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, true);
  require_cuda_cell(attention_cell("linear_attention", inputs, dtype, out.options, std::max(x.dk, x.dv)));
  const FeatureMap map = parse_feature_map(linear_attention_feature_map_option().text(out.options)).value_or(FeatureMap::elu_plus_one);
  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  Buffer<T> prefill = device_output<T>(cuda, x.v.size());
  const std::size_t states = static_cast<std::size_t>(x.bh * x.dk * x.dv), sums = static_cast<std::size_t>(x.bh * x.dk);
  Buffer<float> state = device_zeros(cuda, states), normalizer = device_zeros(cuda, sums);
  const LinearPrefillPlan plan = plan_linear_attention_prefill(x.bh, x.length, x.dk, x.dv);
  Buffer<float> chunk_states(cuda.allocator(), static_cast<std::size_t>(plan.workspace_state_elements));
  Buffer<float> chunk_sums(cuda.allocator(), static_cast<std::size_t>(plan.workspace_sum_elements));
  launch_linear_attention_prefill<T>(plan, map, q.data(), k.data(), v.data(), state.data(), normalizer.data(),
                                     prefill.data(), chunk_states.data(), chunk_sums.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  const Buffer<T> q_t = device_copy<T>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, x.bh, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, x.bh, x.length, x.dv));
  Buffer<T> decode = device_output<T>(cuda, x.v.size());
  Buffer<float> decode_state = device_zeros(cuda, states), decode_normalizer = device_zeros(cuda, sums);
  const LinearDecodePlan step = plan_linear_attention_decode(x.bh, x.dk, x.dv);
  for (std::int64_t t = 0; t < x.length; ++t) {
    launch_linear_attention_decode<T>(step, map, q_t.data() + t * x.bh * x.dk, k_t.data() + t * x.bh * x.dk,
                                      v_t.data() + t * x.bh * x.dv, decode_state.data(), decode_normalizer.data(),
                                      decode.data() + t * x.bh * x.dv, cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dv));
  replace_state(out, "final_state", fetch(cuda, state), fetch(cuda, decode_state));
  replace_state(out, "final_normalizer", fetch(cuda, normalizer), fetch(cuda, decode_normalizer));
}

}  // namespace

void linear_attention_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { linear_attention_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
