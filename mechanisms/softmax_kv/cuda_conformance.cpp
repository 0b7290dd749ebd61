// softmax_kv's CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/softmax_kv/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA only.
#include "mechanisms/softmax_kv/conformance.hpp"

#include <algorithm>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"

namespace arch_bench {

namespace {

template <class T>
void softmax_kv_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, false);
  require_cuda_cell(attention_cell("softmax_kv", inputs, dtype, out.options, x.dk));
  // k and v hold kv_heads heads (grouped-query attention): query head bh reads K/V head bh / group.
  const std::int64_t group = inputs.axis("heads") / inputs.axis("kv_heads");
  const std::int64_t kv_rows = x.bh / group;
  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  Buffer<T> prefill = device_output<T>(cuda, x.q.size());
  SoftmaxPrefillCudaPlan prefill_plan = plan_softmax_prefill_cuda(x.bh, x.length, x.dk, dtype);
  prefill_plan.group = group;
  configure_softmax_prefill<T>(prefill_plan);
  launch_softmax_prefill<T>(prefill_plan, q.data(), k.data(), v.data(), prefill.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  // Token t is appended at cache row t and attends over rows 0..t, the split planned per step.
  const int sms = cuda.device().multiprocessors;
  std::int64_t workspace_floats = 1;
  for (std::int64_t t = 0; t < x.length; ++t) {
    workspace_floats = std::max(
        workspace_floats, plan_softmax_decode_cuda(x.bh, x.dk, dtype, x.length, t + 1, sms).workspace_floats());
  }
  const Buffer<T> q_t = device_copy<T>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, kv_rows, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, kv_rows, x.length, x.dk));
  Buffer<T> k_cache = device_output<T>(cuda, x.k.size()), v_cache = device_output<T>(cuda, x.v.size());
  Buffer<T> decode = device_output<T>(cuda, x.q.size());
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(workspace_floats));
  const std::int64_t step = x.bh * x.dk, kv_step = kv_rows * x.dk;
  for (std::int64_t t = 0; t < x.length; ++t) {
    SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(x.bh, x.dk, dtype, x.length, t + 1, sms);
    plan.group = group;
    launch_softmax_decode<T>(plan, q_t.data() + t * step, k_t.data() + t * kv_step, v_t.data() + t * kv_step,
                             k_cache.data(), v_cache.data(), t, workspace.data(), decode.data() + t * step,
                             cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dk));
  replace_values(state_named(out, "k_cache").value, fetch(cuda, k_cache));
  replace_values(state_named(out, "v_cache").value, fetch(cuda, v_cache));
}

}  // namespace

void softmax_kv_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { softmax_kv_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
