// retnet's CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/retnet/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA only.
#include "mechanisms/retnet/conformance.hpp"

#include <algorithm>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/retnet/cuda.hpp"

namespace arch_bench {

namespace {

template <class T>
void retnet_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, true);
  require_cuda_cell(attention_cell("retnet", inputs, dtype, out.options, std::max(x.dk, x.dv)));
  const std::int64_t heads = inputs.axis("heads");
  const int sms = cuda.device().multiprocessors;
  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  Buffer<T> prefill = device_output<T>(cuda, x.v.size());
  const std::size_t states = static_cast<std::size_t>(x.bh * x.dk * x.dv);
  Buffer<float> state = device_zeros(cuda, states);
  launch_retnet_recurrence<T>(plan_retnet_cuda(x.bh, x.length, x.dk, x.dv, sms), heads, q.data(), k.data(), v.data(),
                              state.data(), prefill.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  const Buffer<T> q_t = device_copy<T>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, x.bh, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, x.bh, x.length, x.dv));
  Buffer<T> decode = device_output<T>(cuda, x.v.size());
  Buffer<float> decode_state = device_zeros(cuda, states);
  const ColumnRecurrencePlan step = plan_retnet_cuda(x.bh, 1, x.dk, x.dv, sms);
  for (std::int64_t t = 0; t < x.length; ++t) {
    launch_retnet_recurrence<T>(step, heads, q_t.data() + t * x.bh * x.dk, k_t.data() + t * x.bh * x.dk,
                                v_t.data() + t * x.bh * x.dv, decode_state.data(), decode.data() + t * x.bh * x.dv,
                                cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dv));
  replace_state(out, "final_state", fetch(cuda, state), fetch(cuda, decode_state));
}

}  // namespace

void retnet_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { retnet_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
