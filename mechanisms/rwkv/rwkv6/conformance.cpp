// rwkv6 on inputs from .npy files (`arch-bench conformance`): the chunkwise prefill, the decode step
// token by token from S = 0, and the fp64 recurrent reference.
#include "mechanisms/rwkv/conformance_run.hpp"
#include "mechanisms/rwkv/rwkv6/cpu.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "mechanisms/rwkv/rwkv6/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

struct Rwkv6Generation {
  static constexpr RwkvVersion version = RwkvVersion::v6;
  static constexpr const char* id = "rwkv6";

  static ConformanceSpec spec() {
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

  template <class T>
  static ConformanceOutputs run(const ConformanceInputs& files, DType dtype) {
    RwkvInputs in = rwkv_inputs_from_files(files, dtype, version);
    in.u = to_fp32_values(files.at("time_faaaa"));
    const RwkvShape shape{in.batch_heads, in.heads, in.dim};
    const RwkvParameters params{nullptr, in.u.data()};
    const std::int64_t length = in.tokens;
    ConformanceOutputs out;
    const RwkvRunStates states = run_rwkv_conformance<T>(
        files, in, std::vector<float>(rwkv6_state_floats(shape), 0.0f),
        [&](const RwkvStorage<T>& storage, float* state, T* o) {
          rwkv6_prefill_chunkwise(shape, params, length, storage.view(), state, o);
        },
        [&](const RwkvTokens<T>& x, float* state, T* o) { rwkv6_recurrent(shape, params, 1, x, state, o); },
        [&](std::int64_t h, double* outputs, double* state) {
          copy_matrix_result(rwkv6_reference(in.head_matrix(kRwkvR, h, length), in.head_matrix(kRwkvK, h, length),
                                             in.head_matrix(kRwkvV, h, length), in.head_matrix(kRwkvDecay, h, length),
                                             in.parameter(in.u, h)),
                             outputs, state);
        },
        out);
    out.states.push_back(
        kernel_state("final_state", rwkv_matrix_state_shape(files, in), states.prefill, states.decode, states.reference));
    out.details = {{"prefill_chunk", kRwkv6Chunk}, {"prefill_sub_chunk", kRwkv6SubChunk}};
    return out;
  }

  static std::vector<RwkvParameterFile> parameter_files(const RwkvInputs& drawn) { return {{"time_faaaa", &drawn.u}}; }

#if ARCH_BENCH_HAVE_CUDA
  static CudaConformanceRun cuda_kernels() { return rwkv6_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& rwkv6_conformance() {
  static const RwkvConformance<Rwkv6Generation> adapter;
  return adapter;
}

}  // namespace arch_bench
