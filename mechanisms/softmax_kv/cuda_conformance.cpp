// softmax_kv's and sliding_window's CUDA kernels on conformance inputs (`arch-bench conformance
// --device cuda`), declared in mechanisms/softmax_kv/conformance.hpp and returned by their adapters'
// cuda_kernels(). Built with CUDA only. The two differ only in the window: sliding_window's prefill
// is banded and its decode state is a ring, as in their CPU adapters.
#include "mechanisms/softmax_kv/conformance.hpp"

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#include "mechanisms/softmax_kv/cudnn_sdpa.hpp"
#include "mechanisms/softmax_kv/softmax_impl.hpp"

namespace arch_bench {

namespace {

// window 0: softmax_kv (cache of `length` rows, token t at row t, written back as the k_cache and
// v_cache states); W > 0: sliding_window (ring of min(length, W) rows, token t at row t % slots,
// attending over the min(t + 1, slots) rows filled; the ring is not an output).
// softmax_kv's --softmax-impl on conformance inputs, as `run` chooses it (softmax_impl.hpp): true when
// cuDNN ran and wrote `out`; false when the hand kernels are to run (recorded in details.softmax_impl).
// An explicit cudnn that cannot run is a usage error, nothing written.
bool ran_on_cudnn(const Cell& cell, const AttentionValues& x, std::int64_t kv_heads, ConformanceOutputs& out,
                  CudaBackend& cuda) {
  const SoftmaxImplFacts facts = softmax_impl_facts(cell, "cuda");
  const auto choice = choose_softmax_impl(facts);
  if (!choice) throw UsageError("--device cuda: " + *softmax_impl_problem(cell, "cuda"));
  std::string fallback = choice->fallback_reason;
  if (choice->impl == SoftmaxImpl::cudnn) {
#if ARCH_BENCH_HAVE_CUDNN
    try {
      softmax_kv_conformance_on_cudnn(x, cell.batch, kv_heads, out, cuda);
      return true;
    } catch (const CudnnGraphUnsupported& unsupported) {
      if (facts.requested == "cudnn") throw UsageError(std::string("--device cuda: ") + unsupported.what());
      fallback = std::string("cuDNN cannot build the graph: ") + unsupported.what();
    }
#else
    (void)x, (void)kv_heads;
    fallback = "this build has no cuDNN variant";
#endif
  }
  std::string ran = softmax_hand_conformance_kernels(cell.dtype, cell.head_dim);
  if (!fallback.empty()) ran += " (auto: " + fallback + ")";
  out.details["softmax_impl"] = ran;
  return false;
}

template <class T>
void attention_on_cuda(const std::string& mechanism, std::int64_t window, const ConformanceInputs& inputs, DType dtype,
                       ConformanceOutputs& out, CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, false);
  const Cell cell = attention_cell(mechanism, inputs, dtype, out.options, x.dk);
  require_cuda_cell(cell);
  if (window == 0 && ran_on_cudnn(cell, x, inputs.axis("kv_heads"), out, cuda)) return;
  // k and v hold kv_heads heads (grouped-query attention): query head bh reads K/V head bh / group.
  const std::int64_t group = inputs.axis("heads") / inputs.axis("kv_heads");
  const std::int64_t kv_rows = x.bh / group;
  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  Buffer<T> prefill = device_output<T>(cuda, x.q.size());
  const SoftmaxPrefillCudaPlan prefill_plan = plan_softmax_prefill_cuda(x.bh, group, x.length, x.dk, dtype, window);
  configure_softmax_prefill<T>(prefill_plan);
  launch_softmax_prefill<T>(prefill_plan, q.data(), k.data(), v.data(), prefill.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  // Token t goes to row t % slots and attends over the rows filled so far, the split planned per
  // step as the harness plans it.
  const std::int64_t slots = window > 0 ? std::max<std::int64_t>(1, std::min(x.length, window)) : x.length;
  auto plan_step = [&](std::int64_t t) {
    return plan_softmax_decode_cuda(x.bh, group, x.dk, dtype, slots, std::min(t + 1, slots),
                                    cuda.device().multiprocessors);
  };
  std::int64_t workspace_floats = 1;
  for (std::int64_t t = 0; t < x.length; ++t) workspace_floats = std::max(workspace_floats, plan_step(t).workspace_floats());
  const Buffer<T> q_t = device_copy<T>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, kv_rows, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, kv_rows, x.length, x.dk));
  const std::size_t cache = static_cast<std::size_t>(kv_rows * slots * x.dk);
  Buffer<T> k_cache = device_output<T>(cuda, cache), v_cache = device_output<T>(cuda, cache);
  Buffer<T> decode = device_output<T>(cuda, x.q.size());
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(workspace_floats));
  const std::int64_t step = x.bh * x.dk, kv_step = kv_rows * x.dk;
  for (std::int64_t t = 0; t < x.length; ++t) {
    launch_softmax_decode<T>(plan_step(t), q_t.data() + t * step, k_t.data() + t * kv_step,
                             v_t.data() + t * kv_step, k_cache.data(), v_cache.data(), t % slots, workspace.data(),
                             decode.data() + t * step, cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dk));
  if (window == 0) {
    replace_values(state_named(out, "k_cache").value, fetch(cuda, k_cache));
    replace_values(state_named(out, "v_cache").value, fetch(cuda, v_cache));
  }
}

}  // namespace

void softmax_kv_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  attention_conformance_on_cuda("softmax_kv", 0, inputs, dtype, out, backend);
}

void attention_conformance_on_cuda(const std::string& mechanism, std::int64_t window, const ConformanceInputs& inputs,
                                   DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) {
    attention_on_cuda<T>(mechanism, window, inputs, dtype, out, cuda);
  });
}

}  // namespace arch_bench
