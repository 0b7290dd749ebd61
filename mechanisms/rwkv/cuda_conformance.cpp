// The RWKV generations' CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`),
// declared in mechanisms/rwkv/<id>/conformance.hpp and returned by each adapter's cuda_kernels(). The
// same inputs, parameters and state files as the CPU adapters (rwkv4: the state split into a, b, p;
// rwkv7: H transposed to the reference's S [value, key]). Built with CUDA only.
#include <cmath>
#include <type_traits>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/rwkv/conformance_common.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/rwkv4/conformance.hpp"
#include "mechanisms/rwkv/rwkv6/conformance.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_cuda.hpp"
#include "mechanisms/rwkv/rwkv7/conformance.hpp"
#include "mechanisms/rwkv/rwkv7/cpu.hpp"

namespace arch_bench {

namespace {

// The parameters the CPU adapter reads from the files (rwkv4: w = exp(time_decay), u = time_first;
// rwkv6: u = time_faaaa; rwkv7: none).
void read_parameters(const ConformanceInputs& files, RwkvInputs& in) {
  if (in.version == RwkvVersion::v4) {
    in.time_decay = to_fp32_values(files.at("time_decay"));
    in.u = to_fp32_values(files.at("time_first"));
    in.w.resize(in.time_decay.size());
    for (std::size_t i = 0; i < in.w.size(); ++i) in.w[i] = std::exp(in.time_decay[i]);  // as draw_rwkv_parameters
  } else if (in.version == RwkvVersion::v6) {
    in.u = to_fp32_values(files.at("time_faaaa"));
  }
}

// Device copies of the inputs a generation reads, in `layout` ([bh, L, dim] or token-major).
template <class T>
struct DeviceSequence {
  DeviceSequence(CudaBackend& cuda, const RwkvInputs& in, bool token_major_layout) {
    const auto used = rwkv_inputs_used(in.version);
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (!used[i]) continue;
      buffers[i] = device_copy<T>(cuda, token_major_layout ? token_major(in.sequence[i], in.batch_heads, in.tokens, in.dim)
                                                           : in.sequence[i]);
    }
  }
  // Tokens starting at element `offset` of every buffer.
  RwkvTokens<T> view(std::int64_t offset = 0) const {
    auto at = [&](int i) { return buffers[i].data() == nullptr ? nullptr : buffers[i].data() + offset; };
    return {at(kRwkvR), at(kRwkvK), at(kRwkvV), at(kRwkvDecay), at(kRwkvKappa), at(kRwkvIclr)};
  }
  std::array<Buffer<T>, kRwkvInputCount> buffers;
};

Buffer<float> fresh_state(CudaBackend& cuda, const RwkvScanPlan& plan) {
  const std::int64_t dim = plan.dim, bh = plan.batch_heads;
  Buffer<float> state = device_zeros(cuda, static_cast<std::size_t>(plan.version == RwkvVersion::v4 ? bh * 3 * dim
                                                                                                   : bh * dim * dim));
  if (plan.version == RwkvVersion::v4) launch_rwkv4_reset(plan, state.data(), cuda.stream());
  return state;
}

// The state files of each generation, from the kernels' prefill and decode-loop states.
void replace_states(const RwkvInputs& in, ConformanceOutputs& out, const std::vector<float>& prefill,
                    const std::vector<float>& decode) {
  const std::int64_t bh = in.batch_heads, dim = in.dim;
  if (in.version == RwkvVersion::v6) {
    replace_state(out, "final_state", prefill, decode);
  } else if (in.version == RwkvVersion::v7) {
    const RwkvShape shape{bh, in.heads, dim};
    replace_state(out, "final_state", rwkv7_state_value_key(shape, prefill), rwkv7_state_value_key(shape, decode));
  } else {
    const char* names[] = {"final_num", "final_den", "final_max"};
    for (int part = 0; part < 3; ++part) {
      std::vector<float> p(static_cast<std::size_t>(bh * dim)), d(p.size());
      for (std::int64_t h = 0; h < bh; ++h) {
        for (std::int64_t j = 0; j < dim; ++j) {
          p[h * dim + j] = prefill[(h * 3 + part) * dim + j];
          d[h * dim + j] = decode[(h * 3 + part) * dim + j];
        }
      }
      replace_state(out, names[part], p, d);
    }
  }
}

template <class T>
void rwkv_on_cuda(RwkvVersion version, const ConformanceInputs& files, DType dtype, ConformanceOutputs& out,
                  CudaBackend& cuda) {
  RwkvInputs in = rwkv_inputs_from_files(files, dtype, version);
  read_parameters(files, in);
  require_cuda_cell(attention_cell(rwkv_mechanism_id(version), files, dtype, out.options, in.dim));
  const std::int64_t bh = in.batch_heads, dim = in.dim, length = in.tokens;
  const Buffer<float> w = in.w.empty() ? Buffer<float>() : device_copy<float>(cuda, in.w);
  const Buffer<float> u = in.u.empty() ? Buffer<float>() : device_copy<float>(cuda, in.u);
  const RwkvParameters params{w.data(), u.data()};

  const int sms = cuda.device().multiprocessors;
  const RwkvScanPlan plan = plan_rwkv_scan(version, bh, in.heads, length, dim, sms);
  const DeviceSequence<T> sequence(cuda, in, false);
  Buffer<T> prefill = device_output<T>(cuda, static_cast<std::size_t>(bh * length * dim));
  Buffer<float> state = fresh_state(cuda, plan);
  bool chunked = false;
  if constexpr (std::is_same_v<T, bf16>) {
    // rwkv6's and rwkv7's bf16 prefill run chunkwise on tensor cores, as their prefill cells do.
    if (version == RwkvVersion::v6 && rwkv6_chunk_supports(dim) && length > 0) {
      const Rwkv6ChunkPlan chunks = plan_rwkv6_chunk(bh, in.heads, length, dim);
      configure_rwkv6_chunked(chunks);
      Buffer<float> workspace = device_zeros(cuda, static_cast<std::size_t>(chunks.workspace_floats()));
      launch_rwkv6_chunked(chunks, params, sequence.view(), state.data(), workspace.data(), prefill.data(),
                           cuda.stream());
      cuda.synchronize();  // the workspace is freed on return
      chunked = true;
    }
    // So does rwkv7's (rwkv7/chunk_cuda.cu).
    if (version == RwkvVersion::v7 && rwkv7_chunk_supports(dim) && length > 0) {
      const Rwkv7ChunkPlan chunks = plan_rwkv7_chunk(bh, length, dim, sms);
      configure_rwkv7_chunked(chunks);
      Buffer<float> workspace = device_zeros(cuda, static_cast<std::size_t>(chunks.workspace_floats()));
      launch_rwkv7_chunked(chunks, sequence.view(), state.data(), workspace.data(), prefill.data(), cuda.stream());
      cuda.synchronize();  // the workspace is freed on return
      chunked = true;
    }
  }
  if (!chunked) launch_rwkv_scan<T>(plan, params, sequence.view(), state.data(), prefill.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  // Decode steps token by token from a fresh state: token t of every head is one [bh, dim] block.
  const RwkvScanPlan step = plan_rwkv_scan(version, bh, in.heads, 1, dim, sms);
  const DeviceSequence<T> tokens(cuda, in, true);
  Buffer<T> decode = device_output<T>(cuda, static_cast<std::size_t>(bh * length * dim));
  Buffer<float> decode_state = fresh_state(cuda, step);
  for (std::int64_t t = 0; t < length; ++t) {
    launch_rwkv_scan<T>(step, params, tokens.view(t * bh * dim), decode_state.data(), decode.data() + t * bh * dim,
                        cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), bh, length, dim));
  replace_states(in, out, fetch(cuda, state), fetch(cuda, decode_state));
}

void run_version(RwkvVersion version, const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out,
                 Backend& backend) {
  run_for_storage(dtype, backend,
                  [&]<class T>(CudaBackend& cuda) { rwkv_on_cuda<T>(version, inputs, dtype, out, cuda); });
}

}  // namespace

void rwkv4_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_version(RwkvVersion::v4, inputs, dtype, out, backend);
}
void rwkv6_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_version(RwkvVersion::v6, inputs, dtype, out, backend);
}
void rwkv7_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_version(RwkvVersion::v7, inputs, dtype, out, backend);
}

}  // namespace arch_bench
