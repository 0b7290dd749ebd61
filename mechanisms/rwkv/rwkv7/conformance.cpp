// rwkv7 on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference.
#include "mechanisms/rwkv/conformance_run.hpp"
#include "mechanisms/rwkv/rwkv7/cpu.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"
#include "mechanisms/rwkv/rwkv7/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

struct Rwkv7Generation {
  static constexpr RwkvVersion version = RwkvVersion::v7;
  static constexpr const char* id = "rwkv7";

  static ConformanceSpec spec() {
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

  template <class T>
  static ConformanceOutputs run(const ConformanceInputs& files, DType dtype) {
    const RwkvInputs in = rwkv_inputs_from_files(files, dtype, version);
    const RwkvShape shape{in.batch_heads, in.heads, in.dim};
    const std::int64_t length = in.tokens;
    ConformanceOutputs out;
    const RwkvRunStates states = run_rwkv_conformance<T>(
        files, in, std::vector<float>(rwkv7_state_floats(shape), 0.0f),
        [&](const RwkvStorage<T>& storage, float* state, T* o) {
          rwkv7_prefill_chunkwise(shape, length, storage.view(), state, o);
        },
        [&](const RwkvTokens<T>& x, float* state, T* o) { rwkv7_recurrent(shape, 1, x, state, o); },
        [&](std::int64_t h, double* outputs, double* state) {
          copy_matrix_result(rwkv7_reference(in.head_matrix(kRwkvR, h, length), in.head_matrix(kRwkvDecay, h, length),
                                             in.head_matrix(kRwkvK, h, length), in.head_matrix(kRwkvV, h, length),
                                             in.head_matrix(kRwkvKappa, h, length), in.head_matrix(kRwkvIclr, h, length)),
                             outputs, state);
        },
        out);
    // The kernels hold H = S^T; the files hold the reference's S [value, key].
    out.states.push_back(kernel_state("final_state", rwkv_matrix_state_shape(files, in),
                                      rwkv7_state_value_key(shape, states.prefill),
                                      rwkv7_state_value_key(shape, states.decode), states.reference));
    return out;
  }

  static std::vector<RwkvParameterFile> parameter_files(const RwkvInputs&) { return {}; }

#if ARCH_BENCH_HAVE_CUDA
  static CudaConformanceRun cuda_kernels() { return rwkv7_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& rwkv7_conformance() {
  static const RwkvConformance<Rwkv7Generation> adapter;
  return adapter;
}

}  // namespace arch_bench
