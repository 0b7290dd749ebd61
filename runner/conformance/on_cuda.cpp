#include "runner/conformance/on_cuda.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include <algorithm>
#include <cmath>

#include "mechanisms/linear_attention/cuda.hpp"
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/softmax_kv/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#else
#include "core/backends/cuda/device_probe.hpp"
#include "mechanisms/linear_attention/options.hpp"
#include "mechanisms/mamba/options.hpp"
#include "mechanisms/performer/options.hpp"
#endif

namespace arch_bench {

#if ARCH_BENCH_HAVE_CUDA

namespace {

// [rows, tokens, width] <-> [tokens, rows, width]: a decode step reads token t of every row as one
// contiguous [rows, width] block, so the whole sequence is uploaded once and stepped by offsets.
std::vector<float> token_major(const std::vector<float>& x, std::int64_t rows, std::int64_t tokens,
                               std::int64_t width) {
  std::vector<float> out(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      std::copy_n(x.begin() + (r * tokens + t) * width, width, out.begin() + (t * rows + r) * width);
    }
  }
  return out;
}
std::vector<float> row_major(const std::vector<float>& x, std::int64_t rows, std::int64_t tokens, std::int64_t width) {
  std::vector<float> out(x.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy_n(x.begin() + (t * rows + r) * width, width, out.begin() + (r * tokens + t) * width);
    }
  }
  return out;
}

// Overwrites the values of `array` (shape and file dtype kept) with the GPU's.
void replace_values(NpyArray& array, const std::vector<float>& values) {
  if (array.values.size() != values.size()) {
    throw std::logic_error(fmt::format("conformance on cuda: {} values for an array of {}", values.size(),
                                       array.values.size()));
  }
  std::copy(values.begin(), values.end(), array.values.begin());
}
ConformanceState& state_named(ConformanceOutputs& out, const std::string& name) {
  for (ConformanceState& state : out.states) {
    if (state.name == name) return state;
  }
  throw std::logic_error("conformance on cuda: the adapter wrote no state " + name);
}
// A state from the prefill and, when the adapter keeps one, the decode loop's copy.
void replace_state(ConformanceOutputs& out, const std::string& name, const std::vector<float>& prefill,
                   const std::vector<float>& decode) {
  ConformanceState& state = state_named(out, name);
  replace_values(state.value, prefill);
  if (state.decode_value) replace_values(*state.decode_value, decode);
}

template <class T>
Buffer<T> device_copy(CudaBackend& cuda, const std::vector<float>& values) {
  Buffer<T> buffer(cuda.allocator(), values.size());
  upload<T>(cuda, values.data(), static_cast<std::int64_t>(values.size()), buffer.data());
  return buffer;
}
template <class T>
Buffer<T> device_output(CudaBackend& cuda, std::size_t count) {
  Buffer<T> buffer(cuda.allocator(), count);
  poison(cuda, buffer.data(), buffer.bytes());  // a value the kernel never wrote fails the comparison
  return buffer;
}
template <class T>
std::vector<float> fetch(CudaBackend& cuda, const Buffer<T>& buffer) {
  cuda.synchronize();
  return download<T>(cuda, buffer.data(), static_cast<std::int64_t>(buffer.size()));
}
Buffer<float> device_zeros(CudaBackend& cuda, std::size_t count) {
  Buffer<float> buffer(cuda.allocator(), count);
  zero_async(cuda, buffer.data(), buffer.bytes());
  return buffer;
}

void require_cuda_cell(const Cell& cell) {
  const Mechanism* mechanism = find_mechanism(cell.mechanism);
  if (auto why = mechanism->unsupported(cell)) throw UsageError(fmt::format("--device cuda: {}", *why));
  if (auto why = mechanism->unsupported_on(cell, "cuda")) throw UsageError(fmt::format("--device cuda: {}", *why));
}
Cell attention_cell(const std::string& mechanism, const ConformanceInputs& inputs, DType dtype,
                    const MechanismOptions& options, std::int64_t width) {
  Cell cell;
  cell.mechanism = mechanism;
  cell.phase = Phase::prefill;
  cell.sequence_length = inputs.axis("length");
  cell.batch = inputs.axis("batch");
  cell.heads = inputs.axis("heads");
  cell.head_dim = width;
  cell.dtype = dtype;
  cell.options = options;
  return cell;
}

// q, k, v of an attention layout, rounded to the storage dtype: [bh, L, dim | dv].
struct AttentionValues {
  std::int64_t bh, length, dk, dv;
  std::vector<float> q, k, v;
  AttentionValues(const ConformanceInputs& inputs, DType dtype, bool has_dv)
      : bh(inputs.axis("batch") * inputs.axis("heads")),
        length(inputs.axis("length")),
        dk(inputs.axis("dim")),
        dv(has_dv ? inputs.axis("dv") : dk),
        q(to_storage_values(inputs.at("q"), dtype)),
        k(to_storage_values(inputs.at("k"), dtype)),
        v(to_storage_values(inputs.at("v"), dtype)) {}
};

template <class T>
void softmax_kv_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const AttentionValues x(inputs, dtype, false);
  require_cuda_cell(attention_cell("softmax_kv", inputs, dtype, out.options, x.dk));
  const Buffer<T> q = device_copy<T>(cuda, x.q), k = device_copy<T>(cuda, x.k), v = device_copy<T>(cuda, x.v);
  Buffer<T> prefill = device_output<T>(cuda, x.q.size());
  const SoftmaxPrefillCudaPlan prefill_plan = plan_softmax_prefill_cuda(x.bh, x.length, x.dk, dtype);
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
  const Buffer<T> k_t = device_copy<T>(cuda, token_major(x.k, x.bh, x.length, x.dk));
  const Buffer<T> v_t = device_copy<T>(cuda, token_major(x.v, x.bh, x.length, x.dk));
  Buffer<T> k_cache = device_output<T>(cuda, x.k.size()), v_cache = device_output<T>(cuda, x.v.size());
  Buffer<T> decode = device_output<T>(cuda, x.q.size());
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(workspace_floats));
  const std::int64_t step = x.bh * x.dk;
  for (std::int64_t t = 0; t < x.length; ++t) {
    const SoftmaxDecodeCudaPlan plan = plan_softmax_decode_cuda(x.bh, x.dk, dtype, x.length, t + 1, sms);
    launch_softmax_decode<T>(plan, q_t.data() + t * step, k_t.data() + t * step, v_t.data() + t * step,
                             k_cache.data(), v_cache.data(), t, workspace.data(), decode.data() + t * step,
                             cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), x.bh, x.length, x.dk));
  replace_values(state_named(out, "k_cache").value, fetch(cuda, k_cache));
  replace_values(state_named(out, "v_cache").value, fetch(cuda, v_cache));
}

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
  const PerformerPrefillPlan plan = plan_performer_prefill(shape, x.length);
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace.floats));
  launch_performer_prefill<T>(plan, projection.data(), q.data(), k.data(), v.data(), state.data(), normalizer.data(),
                              running_max.data(), prefill.data(), workspace.data(), cuda.stream());
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

// [batch, N, length] (the files) -> [batch, length, N] (the kernels' token-major B and C).
std::vector<float> token_major_state_inputs(const std::vector<float>& x, std::int64_t batch, std::int64_t n,
                                            std::int64_t length) {
  std::vector<float> out(x.size());
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t s = 0; s < n; ++s) {
      for (std::int64_t t = 0; t < length; ++t) out[(b * length + t) * n + s] = x[(b * n + s) * length + t];
    }
  }
  return out;
}

template <class T>
void mamba_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const std::int64_t batch = inputs.axis("batch"), channels = inputs.axis("d_inner");
  const std::int64_t length = inputs.axis("length"), n = inputs.axis("N");
  Cell cell;
  cell.mechanism = "mamba";
  cell.phase = Phase::prefill;
  cell.sequence_length = length;
  cell.batch = batch;
  cell.heads = 1;
  cell.head_dim = channels;
  cell.dtype = dtype;
  cell.options = out.options;
  cell.options.set(mamba_state_size_option().key, n);
  require_cuda_cell(cell);
  const MambaShape shape{batch, channels, n};
  const std::int64_t rows = shape.rows();
  const std::vector<float> u = to_storage_values(inputs.at("u"), dtype);
  const std::vector<float> dt = to_storage_values(inputs.at("dt"), dtype);
  const std::vector<float> z = to_storage_values(inputs.at("z"), dtype);
  const std::vector<float> B = token_major_state_inputs(to_storage_values(inputs.at("B"), dtype), batch, n, length);
  const std::vector<float> C = token_major_state_inputs(to_storage_values(inputs.at("C"), dtype), batch, n, length);
  std::vector<float> A = to_fp32_values(inputs.at("A_log"));
  for (float& a : A) a = -std::exp(a);  // as the adapter and MambaInputs::A()
  const Buffer<float> A_d = device_copy<float>(cuda, A);
  const Buffer<float> bias = device_copy<float>(cuda, to_fp32_values(inputs.at("dt_bias")));
  const Buffer<float> D = device_copy<float>(cuda, to_fp32_values(inputs.at("D")));
  const MambaParameters params{A_d.data(), bias.data(), D.data()};

  const Buffer<T> u_d = device_copy<T>(cuda, u), dt_d = device_copy<T>(cuda, dt), z_d = device_copy<T>(cuda, z);
  const Buffer<T> B_d = device_copy<T>(cuda, B), C_d = device_copy<T>(cuda, C);
  Buffer<T> prefill = device_output<T>(cuda, u.size());
  Buffer<float> state = device_zeros(cuda, static_cast<std::size_t>(rows * n));
  launch_mamba_prefill<T>(plan_mamba_prefill(shape, length), params,
                          MambaTokens<T>{u_d.data(), dt_d.data(), z_d.data(), B_d.data(), C_d.data()}, state.data(),
                          prefill.data(), cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  // Decode layouts: token t of every row ([rows]) and of every batch element ([batch, N]).
  const Buffer<T> u_t = device_copy<T>(cuda, token_major(u, rows, length, 1));
  const Buffer<T> dt_t = device_copy<T>(cuda, token_major(dt, rows, length, 1));
  const Buffer<T> z_t = device_copy<T>(cuda, token_major(z, rows, length, 1));
  const Buffer<T> B_t = device_copy<T>(cuda, token_major(B, batch, length, n));
  const Buffer<T> C_t = device_copy<T>(cuda, token_major(C, batch, length, n));
  Buffer<T> decode = device_output<T>(cuda, u.size());
  Buffer<float> decode_state = device_zeros(cuda, static_cast<std::size_t>(rows * n));
  const MambaDecodePlan step = plan_mamba_decode(shape);
  for (std::int64_t t = 0; t < length; ++t) {
    const MambaTokens<T> token{u_t.data() + t * rows, dt_t.data() + t * rows, z_t.data() + t * rows,
                               B_t.data() + t * batch * n, C_t.data() + t * batch * n};
    launch_mamba_decode<T>(step, params, token, decode_state.data(), decode.data() + t * rows, cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), rows, length, 1));
  replace_state(out, "final_state", fetch(cuda, state), fetch(cuda, decode_state));
  out.details["prefill_chunk"] = kMambaScanChunk;
}

using CudaRun = void (*)(const ConformanceInputs&, DType, ConformanceOutputs&, CudaBackend&);
struct CudaKernels {
  const char* mechanism;
  CudaRun fp32;
  CudaRun bf16_storage;
};
constexpr CudaKernels kCudaKernels[] = {
    {"softmax_kv", softmax_kv_on_cuda<float>, softmax_kv_on_cuda<bf16>},
    {"linear_attention", linear_attention_on_cuda<float>, linear_attention_on_cuda<bf16>},
    {"performer", performer_on_cuda<float>, performer_on_cuda<bf16>},
    {"mamba", mamba_on_cuda<float>, mamba_on_cuda<bf16>},
};

}  // namespace

std::vector<std::string> cuda_conformance_mechanisms() {
  std::vector<std::string> ids;
  for (const CudaKernels& kernels : kCudaKernels) ids.emplace_back(kernels.mechanism);
  return ids;
}

void run_conformance_kernels_on_cuda(const std::string& mechanism, const ConformanceInputs& inputs, DType dtype,
                                     ConformanceOutputs& out, Backend& backend) {
  for (const CudaKernels& kernels : kCudaKernels) {
    if (mechanism != kernels.mechanism) continue;
    CudaBackend& cuda = cuda_backend_of(backend);
    (dtype == DType::bfloat16 ? kernels.bf16_storage : kernels.fp32)(inputs, dtype, out, cuda);
    cuda.synchronize();
    return;
  }
  throw UsageError(fmt::format("--device cuda: {} has no CUDA kernels (those with: {})", mechanism,
                               fmt::join(cuda_conformance_mechanisms(), ", ")));
}

#else  // a build without nvcc

std::vector<std::string> cuda_conformance_mechanisms() { return {}; }

void run_conformance_kernels_on_cuda(const std::string&, const ConformanceInputs&, DType, ConformanceOutputs&,
                                     Backend&) {
  throw UsageError(fmt::format("--device cuda: {}", probe_cuda().reason));
}

#endif

}  // namespace arch_bench
