// rwkv4 on inputs from .npy files (`arch-bench conformance`): the prefill, the decode step token by
// token from a fresh state, and the fp64 running-max reference (equal to seed 002's naive formula).
#include <cmath>

#include "mechanisms/rwkv/conformance_run.hpp"
#include "mechanisms/rwkv/rwkv4/cpu.hpp"
#include "mechanisms/rwkv/rwkv4/reference.hpp"
#include "mechanisms/rwkv/rwkv4/conformance.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

struct Rwkv4Generation {
  static constexpr RwkvVersion version = RwkvVersion::v4;
  static constexpr const char* id = "rwkv4";

  static ConformanceSpec spec() {
    const std::vector<std::string> state_axes = {"batch", "heads", "dim"};
    ConformanceSpec spec;
    spec.inputs = {{"k", kRwkvTokenAxes, "keys k_t, one per channel (head, j)"},
                   {"v", kRwkvTokenAxes, "values v_t, one per channel"},
                   {"time_decay", kRwkvParameterAxes, "decay rate w = exp(time_decay) > 0 (RWKV-4's time_decay)", true},
                   {"time_first", kRwkvParameterAxes, "bonus u of the current token (RWKV-4's time_first)", true}};
    spec.outputs = standard_outputs(kRwkvTokenAxes, "wkv_t of seed 002's formula");
    add_state_outputs(spec.outputs, "final_num", state_axes,
                      "a = e^{-p} sum_i e^{-(T-1-i) w + k_i} v_i after the last token, fp32 (from the prefill)",
                      "a from the fp64 reference");
    add_state_outputs(spec.outputs, "final_den", state_axes,
                      "b = e^{-p} sum_i e^{-(T-1-i) w + k_i} after the last token, fp32 (from the prefill)",
                      "b from the fp64 reference");
    add_state_outputs(spec.outputs, "final_max", state_axes, "p, the running maximum exponent, fp32 (from the prefill)",
                      "p from the fp64 reference");
    spec.options = "none";
    spec.notes = "Per channel c = (head, j): wkv_t = (sum_{i<t} e^{-(t-1-i) w + k_i} v_i + e^{u + k_t} v_t) / "
                 "(sum_{i<t} e^{-(t-1-i) w + k_i} + e^{u + k_t}) with w = exp(time_decay), u = time_first; this is "
                 "RWKV-4's wkv (the receptance gate sigmoid(r) * wkv is outside the operator). The state is kept "
                 "relative to its running maximum exponent p (a fresh state has a = b = 0, p = -1e38), so final_num "
                 "and final_den are the sums times e^{-final_max}.";
    return spec;
  }

  template <class T>
  static ConformanceOutputs run(const ConformanceInputs& files, DType dtype) {
    RwkvInputs in = rwkv_inputs_from_files(files, dtype, version);
    in.time_decay = to_fp32_values(files.at("time_decay"));
    in.u = to_fp32_values(files.at("time_first"));
    in.w.resize(in.time_decay.size());
    for (std::size_t i = 0; i < in.w.size(); ++i) in.w[i] = std::exp(in.time_decay[i]);  // as draw_rwkv_parameters
    const RwkvShape shape{in.batch_heads, in.heads, in.dim};
    const RwkvParameters params{in.w.data(), in.u.data()};
    const std::int64_t dim = in.dim, length = in.tokens, bh = in.batch_heads;
    std::vector<float> fresh(rwkv4_state_floats(shape));
    rwkv4_reset_state(shape, fresh.data());
    ConformanceOutputs out;
    const RwkvRunStates states = run_rwkv_conformance<T>(
        files, in, fresh,
        [&](const RwkvStorage<T>& storage, float* state, T* o) {
          rwkv4_prefill(shape, params, length, storage.sequence[kRwkvK].data(), storage.sequence[kRwkvV].data(), state,
                        o);
        },
        [&](const RwkvTokens<T>& x, float* state, T* o) { rwkv4_decode_step(shape, params, x.k, x.v, state, o); },
        [&](std::int64_t h, double* outputs, double* state) {
          const Rwkv4ReferenceResult r = rwkv4_wkv_stable(in.head_matrix(kRwkvK, h, length),
                                                          in.head_matrix(kRwkvV, h, length), in.parameter(in.w, h),
                                                          in.parameter(in.u, h));
          // A head's state [3, dim]: a, b, p.
          std::copy(r.outputs.data.begin(), r.outputs.data.end(), outputs);
          std::copy(r.a.begin(), r.a.end(), state);
          std::copy(r.b.begin(), r.b.end(), state + dim);
          std::copy(r.p.begin(), r.p.end(), state + 2 * dim);
        },
        out);

    // The state [bh, 3, dim] split into its three parts, each [batch, heads, dim].
    const std::vector<std::int64_t> state_shape = {files.axis("batch"), in.heads, dim};
    const char* names[] = {"final_num", "final_den", "final_max"};
    for (int part = 0; part < 3; ++part) {
      std::vector<float> kernel(bh * dim), decoded(bh * dim);
      std::vector<double> ref(bh * dim);
      for (std::int64_t h = 0; h < bh; ++h) {
        for (std::int64_t j = 0; j < dim; ++j) {
          kernel[h * dim + j] = states.prefill[(h * 3 + part) * dim + j];
          decoded[h * dim + j] = states.decode[(h * 3 + part) * dim + j];
          ref[h * dim + j] = states.reference[(h * 3 + part) * dim + j];
        }
      }
      out.states.push_back(kernel_state(names[part], state_shape, kernel, decoded, ref));
    }
    return out;
  }

  static std::vector<RwkvParameterFile> parameter_files(const RwkvInputs& drawn) {
    return {{"time_decay", &drawn.time_decay}, {"time_first", &drawn.u}};
  }

#if ARCH_BENCH_HAVE_CUDA
  static CudaConformanceRun cuda_kernels() { return rwkv4_conformance_on_cuda; }
#endif
};

}  // namespace

const ConformanceAdapter& rwkv4_conformance() {
  static const RwkvConformance<Rwkv4Generation> adapter;
  return adapter;
}

}  // namespace arch_bench
