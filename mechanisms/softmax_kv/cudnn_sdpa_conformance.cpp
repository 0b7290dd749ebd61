// softmax_kv's conformance through cuDNN's fused attention (`arch-bench conformance --device cuda
// --softmax-impl cudnn`, or auto where cuDNN works): the same outputs the hand kernels' run writes
// (cuda_conformance.cpp), so the manifest checks the library against the same fp64 reference.
// The decode loop is one padded graph over a cache of L rows per K/V head: step t appends token t
// at row t and attends over rows 0..t (seq_len_kv = t + 1), as a serving engine drives cuDNN; a graph
// per step would build L graphs.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/backends/cuda/cuda_check.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/softmax_kv/cudnn_sdpa.hpp"

namespace arch_bench {

namespace {

Buffer<float> sdpa_workspace(CudaBackend& cuda, const CudnnSdpa& sdpa) {
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>((sdpa.workspace_bytes() + 3) / 4));
  if (workspace.size() > 0) poison(cuda, workspace.data(), workspace.bytes());
  return workspace;
}

// Step t's sequence lengths for every batch element, all steps at once ([L][batch]), so the loop
// only offsets a pointer: seq_len_q 1, seq_len_kv t + 1.
std::vector<std::int32_t> step_lengths(std::int64_t length, std::int64_t batch, bool kv) {
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(length * batch));
  for (std::int64_t t = 0; t < length; ++t) {
    for (std::int64_t b = 0; b < batch; ++b) lengths[static_cast<std::size_t>(t * batch + b)] = kv ? static_cast<std::int32_t>(t + 1) : 1;
  }
  return lengths;
}

Buffer<std::int32_t> device_ints(CudaBackend& cuda, const std::vector<std::int32_t>& values) {
  Buffer<std::int32_t> buffer(cuda.allocator(), values.size());
  ARCH_BENCH_CUDA_CHECK(cudaMemcpyAsync(buffer.data(), values.data(), buffer.bytes(), cudaMemcpyHostToDevice,
                                        cuda.stream()));
  cuda.synchronize();  // `values` may go before the stream reaches the copy
  return buffer;
}

}  // namespace

void softmax_kv_conformance_on_cudnn(const AttentionValues& x, std::int64_t batch, std::int64_t kv_heads,
                                     ConformanceOutputs& out, CudaBackend& cuda) {
  const std::int64_t heads = x.bh / batch, kv_rows = batch * kv_heads;
  const CudnnSdpa prefill_sdpa(CudnnSdpaShape{.batch = batch, .heads = heads, .kv_heads = kv_heads,
                                              .q_tokens = x.length, .kv_tokens = x.length, .head_dim = x.dk,
                                              .causal = true},
                               cuda.stream());
  const CudnnSdpa decode_sdpa(CudnnSdpaShape{.batch = batch, .heads = heads, .kv_heads = kv_heads, .q_tokens = 1,
                                             .kv_tokens = x.length, .head_dim = x.dk, .causal = false,
                                             .padded = true},
                              cuda.stream());

  const Buffer<bf16> q = device_copy<bf16>(cuda, x.q), k = device_copy<bf16>(cuda, x.k), v = device_copy<bf16>(cuda, x.v);
  Buffer<bf16> prefill = device_output<bf16>(cuda, x.q.size());
  Buffer<float> prefill_workspace = sdpa_workspace(cuda, prefill_sdpa);
  prefill_sdpa.enqueue(q.data(), k.data(), v.data(), prefill.data(), prefill_workspace.data());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  // The cache starts poisoned: a row the appends never wrote would turn an output NaN.
  const std::size_t cache = static_cast<std::size_t>(kv_rows * x.length * x.dk);
  Buffer<bf16> k_cache = device_output<bf16>(cuda, cache), v_cache = device_output<bf16>(cuda, cache);
  const Buffer<bf16> q_t = device_copy<bf16>(cuda, token_major(x.q, x.bh, x.length, x.dk));
  const Buffer<bf16> k_t = device_copy<bf16>(cuda, token_major(x.k, kv_rows, x.length, x.dk));
  const Buffer<bf16> v_t = device_copy<bf16>(cuda, token_major(x.v, kv_rows, x.length, x.dk));
  const Buffer<std::int32_t> seq_q = device_ints(cuda, step_lengths(x.length, batch, false));
  const Buffer<std::int32_t> seq_kv = device_ints(cuda, step_lengths(x.length, batch, true));
  Buffer<bf16> decode = device_output<bf16>(cuda, x.q.size());
  Buffer<float> decode_workspace = sdpa_workspace(cuda, decode_sdpa);
  const std::size_t row = static_cast<std::size_t>(x.dk) * sizeof(bf16);
  const std::size_t slab = static_cast<std::size_t>(x.length) * row;
  const std::int64_t step = x.bh * x.dk, kv_step = kv_rows * x.dk;
  for (std::int64_t t = 0; t < x.length; ++t) {
    // The append: token t's row of every K/V head into row t of that head's slab.
    const std::size_t at = static_cast<std::size_t>(t * x.dk);
    ARCH_BENCH_CUDA_CHECK(cudaMemcpy2DAsync(k_cache.data() + at, slab, k_t.data() + t * kv_step, row, row,
                                            static_cast<std::size_t>(kv_rows), cudaMemcpyDeviceToDevice, cuda.stream()));
    ARCH_BENCH_CUDA_CHECK(cudaMemcpy2DAsync(v_cache.data() + at, slab, v_t.data() + t * kv_step, row, row,
                                            static_cast<std::size_t>(kv_rows), cudaMemcpyDeviceToDevice, cuda.stream()));
    decode_sdpa.enqueue(q_t.data() + t * step, k_cache.data(), v_cache.data(), decode.data() + t * step,
                        decode_workspace.data(), seq_q.data() + t * batch, seq_kv.data() + t * batch);
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dk));
  replace_values(state_named(out, "k_cache").value, fetch(cuda, k_cache));
  replace_values(state_named(out, "v_cache").value, fetch(cuda, v_cache));
  out.details["softmax_impl"] = cudnn_sdpa_kernel_name();
}

}  // namespace arch_bench
