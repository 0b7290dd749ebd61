// rwkv6 on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference.
#include "mechanisms/rwkv/conformance_common.hpp"
#include "mechanisms/rwkv/rwkv6/cpu.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "mechanisms/rwkv/rwkv6/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& files, DType dtype) {
  RwkvInputs in = rwkv_inputs_from_files(files, dtype, RwkvVersion::v6);
  in.u = to_fp32_values(files.at("time_faaaa"));
  const RwkvShape shape{in.batch_heads, in.heads, in.dim};
  const RwkvParameters params{nullptr, in.u.data()};
  const std::int64_t batch = files.axis("batch"), dim = in.dim, length = in.tokens, bh = in.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, in.heads, length, dim};
  const RwkvStorage<T> storage(in);

  ConformanceOutputs out;
  std::vector<float> state(rwkv6_state_floats(shape), 0.0f);
  std::vector<T> prefill(storage.sequence[kRwkvK].size());
  rwkv6_prefill_chunkwise(shape, params, length, storage.view(), state.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f);
  out.decode_out = storage_array(out_shape, rwkv_decode_loop(in, storage, [&](const RwkvTokens<T>& x, T* o) {
                                   rwkv6_recurrent(shape, params, 1, x, decode_state.data(), o);
                                 }));

  std::vector<double> reference(prefill.size()), ref_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const RwkvMatrixResult r = rwkv6_reference(in.head_matrix(kRwkvR, h, length), in.head_matrix(kRwkvK, h, length),
                                               in.head_matrix(kRwkvV, h, length),
                                               in.head_matrix(kRwkvDecay, h, length), in.parameter(in.u, h));
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dim);
    std::copy(r.state.data.begin(), r.state.data.end(), ref_state.begin() + h * dim * dim);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);
  const std::vector<std::int64_t> state_shape = {batch, in.heads, dim, dim};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, ref_state));
  out.details = {{"prefill_chunk", kRwkv6Chunk}, {"prefill_sub_chunk", kRwkv6SubChunk}};
  return out;
}

class Rwkv6Conformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    require_declared_options(options, "rwkv6");
    const std::vector<std::string> state_axes = {"batch", "heads", "dim", "dim"};
    ConformanceSpec spec;
    spec.inputs = {{"r", kRwkvTokenAxes, "receptance r_t (the query's role)"},
                   {"k", kRwkvTokenAxes, "keys k_t"},
                   {"v", kRwkvTokenAxes, "values v_t"},
                   {"time_decay_t", kRwkvTokenAxes, "d_t, per token and key channel: w_t = exp(-exp(d_t))"},
                   {"time_faaaa", kRwkvParameterAxes, "bonus u of the current token (RWKV-6's time_faaaa)", true}};
    spec.outputs = standard_outputs(kRwkvTokenAxes, "o_t = r_t^T (S_{t-1} + diag(u) k_t v_t^T)");
    add_state_outputs(spec.outputs, "final_state", state_axes,
                      "S [key channel, value channel] after the last token, fp32 (from the prefill)",
                      "S from the fp64 reference");
    spec.options = "none";
    spec.notes = "Per head, S_t = diag(w_t) S_{t-1} + k_t v_t^T from S = 0 with w_t = exp(-exp(d_t)) (fla's "
                 "chunk_rwkv6 takes log w = -exp(d) as its w; ggml's rwkv_wkv6 takes w itself as td and u as tf). "
                 "dim is at most 256.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    spec(options);
    require_axis_at_most(inputs, "dim", kRwkvMaxDim, "rwkv6");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }

#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return rwkv6_conformance_on_cuda; }
#endif

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    spec(options);
    const RwkvInputs drawn = make_rwkv_inputs(generated_cell(shape, options, dtype), shape.length, seed, RwkvVersion::v6);
    std::map<std::string, NpyArray> files = rwkv_generated_files(drawn, shape.batch);
    files.emplace("time_faaaa", make_array({drawn.heads, drawn.dim}, drawn.u, NpyDtype::float32));
    return files;
  }
};

}  // namespace

const ConformanceAdapter& rwkv6_conformance() {
  static const Rwkv6Conformance adapter;
  return adapter;
}

}  // namespace arch_bench
