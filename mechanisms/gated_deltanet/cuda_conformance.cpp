// gated_deltanet's CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/gated_deltanet/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA only.
#include "mechanisms/gated_deltanet/conformance.hpp"

#include <algorithm>
#include <type_traits>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"

namespace arch_bench {

namespace {

template <class T>
void gated_deltanet_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, true);
  require_cuda_cell(attention_cell("gated_deltanet", inputs, dtype, out.options, std::max(x.dk, x.dv)));
  const int sms = cuda.device().multiprocessors;
  // The gates are fp32 in the files' [batch, heads, length] layout, the kernels' [bh, tokens].
  const std::vector<float> g_values = to_fp32_values(inputs.at("g"));
  const std::vector<float> beta_values = to_fp32_values(inputs.at("beta"));
  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  const Buffer<float> g = device_copy<float>(cuda, g_values), beta = device_copy<float>(cuda, beta_values);
  Buffer<T> prefill = device_output<T>(cuda, x.v.size());
  const std::size_t states = static_cast<std::size_t>(x.bh * x.dk * x.dv);
  Buffer<float> state = device_zeros(cuda, states);
  // The prefill as the cells run it: chunkwise on tensor cores for bf16 with head sizes it takes.
  bool chunked = false;
  if constexpr (std::is_same_v<T, bf16>) {
    if (chunk_delta_rule_supports(x.dk, x.dv) && x.length > 0) {
      const ChunkDeltaRulePlan plan = plan_chunk_delta_rule(x.bh, x.length, x.dk, x.dv, sms);
      Buffer<bf16> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace_bf16_elements()));
      Buffer<float> chunk_log_decay(cuda.allocator(), static_cast<std::size_t>(plan.workspace_decay_elements));
      configure_gated_deltanet_chunked_prefill(plan);
      launch_gated_deltanet_chunked_prefill(plan, q.data(), k.data(), v.data(), g.data(), beta.data(), state.data(),
                                            prefill.data(), workspace.data(), chunk_log_decay.data(), cuda.stream());
      cuda.synchronize();  // the workspace is freed on return
      chunked = true;
    }
  }
  if (!chunked) {
    launch_gated_deltanet_recurrence<T>(plan_gated_deltanet_cuda(x.bh, x.length, x.dk, x.dv, sms), q.data(),
                                        k.data(), v.data(), g.data(), beta.data(), state.data(), prefill.data(),
                                        cuda.stream());
  }
  replace_values(out.prefill_out, fetch(cuda, prefill));

  const Buffer<T> q_t = device_copy<T>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, x.bh, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, x.bh, x.length, x.dv));
  const Buffer<float> g_t = device_copy<float>(cuda, token_major(g_values, x.bh, x.length, 1));
  const Buffer<float> beta_t = device_copy<float>(cuda, token_major(beta_values, x.bh, x.length, 1));
  Buffer<T> decode = device_output<T>(cuda, x.v.size());
  Buffer<float> decode_state = device_zeros(cuda, states);
  const ColumnRecurrencePlan step = plan_gated_deltanet_cuda(x.bh, 1, x.dk, x.dv, sms);
  for (std::int64_t t = 0; t < x.length; ++t) {
    launch_gated_deltanet_recurrence<T>(step, q_t.data() + t * x.bh * x.dk, k_t.data() + t * x.bh * x.dk,
                                        v_t.data() + t * x.bh * x.dv, g_t.data() + t * x.bh, beta_t.data() + t * x.bh,
                                        decode_state.data(), decode.data() + t * x.bh * x.dv, cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dv));
  replace_state(out, "final_state", fetch(cuda, state), fetch(cuda, decode_state));
}

}  // namespace

void gated_deltanet_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out,
                                        Backend& backend) {
  run_for_storage(dtype, backend,
                  [&]<class T>(CudaBackend& cuda) { gated_deltanet_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
