// rwkv7 on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference.
#include "mechanisms/rwkv/conformance_common.hpp"
#include "mechanisms/rwkv/rwkv7/cpu.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"
#include "mechanisms/rwkv/rwkv7/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& files, DType dtype) {
  const RwkvInputs in = rwkv_inputs_from_files(files, dtype, RwkvVersion::v7);
  const RwkvShape shape{in.batch_heads, in.heads, in.dim};
  const std::int64_t batch = files.axis("batch"), dim = in.dim, length = in.tokens, bh = in.batch_heads;
  const std::vector<std::int64_t> out_shape = {batch, in.heads, length, dim};
  const RwkvStorage<T> storage(in);

  ConformanceOutputs out;
  std::vector<float> state(rwkv7_state_floats(shape), 0.0f);
  std::vector<T> prefill(storage.sequence[kRwkvK].size());
  rwkv7_prefill_chunkwise(shape, length, storage.view(), state.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f);
  out.decode_out = storage_array(out_shape, rwkv_decode_loop(in, storage, [&](const RwkvTokens<T>& x, T* o) {
                                   rwkv7_recurrent(shape, 1, x, decode_state.data(), o);
                                 }));

  std::vector<double> reference(prefill.size()), ref_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    const RwkvMatrixResult r = rwkv7_reference(
        in.head_matrix(kRwkvR, h, length), in.head_matrix(kRwkvDecay, h, length), in.head_matrix(kRwkvK, h, length),
        in.head_matrix(kRwkvV, h, length), in.head_matrix(kRwkvKappa, h, length), in.head_matrix(kRwkvIclr, h, length));
    std::copy(r.outputs.data.begin(), r.outputs.data.end(), reference.begin() + h * length * dim);
    std::copy(r.state.data.begin(), r.state.data.end(), ref_state.begin() + h * dim * dim);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);
  const std::vector<std::int64_t> state_shape = {batch, in.heads, dim, dim};
  // The kernels hold H = S^T; the files hold the reference's S [value, key].
  out.states.push_back(kernel_state("final_state", state_shape, rwkv7_state_value_key(shape, state),
                                    rwkv7_state_value_key(shape, decode_state), ref_state));
  return out;
}

class Rwkv7Conformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    require_declared_options(options, "rwkv7");
    const std::vector<std::string> state_axes = {"batch", "heads", "dim", "dim"};
    ConformanceSpec spec;
    spec.inputs = {{"r", kRwkvTokenAxes, "receptance r_t (the query's role)"},
                   {"k", kRwkvTokenAxes, "replacement keys k_t"},
                   {"v", kRwkvTokenAxes, "values v_t"},
                   {"w_raw", kRwkvTokenAxes, "decay logit: w_t = exp(-e^{-0.5} sigmoid(w_raw_t))"},
                   {"kappa", kRwkvTokenAxes, "removal key kappa_hat_t (unit-norm per head; used as given)"},
                   {"iclr", kRwkvTokenAxes, "in-context learning rate a_t in (0, 1)"}};
    spec.outputs = standard_outputs(kRwkvTokenAxes, "o_t = S_t r_t");
    add_state_outputs(spec.outputs, "final_state", state_axes,
                      "S [value channel, key channel] after the last token, fp32 (from the prefill)",
                      "S from the fp64 reference");
    spec.options = "none";
    spec.notes = "Per head, row-vector convention: S_t = S_{t-1} (diag(w_t) + a_t^T b_t) + v_t^T k_t from S = 0, "
                 "a = -kappa_hat, b = kappa_hat * iclr, o_t = S_t r_t; S[i][j] has i = value channel, j = key "
                 "channel (ggml's rwkv_wkv7 and fla's chunk_rwkv7 take a and b directly: pass a = -kappa, "
                 "b = kappa * iclr). dim is at most 256.";
    return spec;
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    spec(options);
    require_axis_at_most(inputs, "dim", kRwkvMaxDim, "rwkv7");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }

#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return rwkv7_conformance_on_cuda; }
#endif

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    spec(options);
    const RwkvInputs drawn = make_rwkv_inputs(generated_cell(shape, options, dtype), shape.length, seed, RwkvVersion::v7);
    return rwkv_generated_files(drawn, shape.batch);
  }
};

}  // namespace

const ConformanceAdapter& rwkv7_conformance() {
  static const Rwkv7Conformance adapter;
  return adapter;
}

}  // namespace arch_bench
