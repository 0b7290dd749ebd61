#pragma once
// The frame every RWKV generation's conformance adapter fills in: the adapter itself (the option and
// axis checks, the dtype dispatch, the CUDA run and the draw of `--generate`) and the run on one
// storage type (the prefill, the decode steps token by token and the fp64 reference head by head).
// A generation brings what is its own: its spec, its kernels and reference, the parameter files it
// reads and writes, and how its state is laid out in the files.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mechanisms/rwkv/conformance_common.hpp"

namespace arch_bench {

// The states a run leaves, each [batch_heads, state per head]: the prefill's, the decode loop's and
// the fp64 reference's.
struct RwkvRunStates {
  std::vector<float> prefill, decode;
  std::vector<double> reference;
};

// Fills out's prefill, decode and reference outputs ([batch, heads, length, dim]) and returns the
// three final states, each started from `fresh` (the state of no tokens):
//   prefill(storage, state, out)  the generation's prefill over the whole sequence;
//   step(tokens, state, out)      its decode step over one token of every head;
//   reference(h, outputs, state)  head h's fp64 outputs [length, dim] and final state (fresh.size() /
//                                 batch_heads values), run in parallel over the heads.
template <class T, class Prefill, class Step, class Reference>
RwkvRunStates run_rwkv_conformance(const ConformanceInputs& files, const RwkvInputs& in, const std::vector<float>& fresh,
                                   Prefill prefill, Step step, Reference reference, ConformanceOutputs& out) {
  const std::int64_t dim = in.dim, length = in.tokens, bh = in.batch_heads;
  const std::vector<std::int64_t> out_shape = {files.axis("batch"), in.heads, length, dim};
  const RwkvStorage<T> storage(in);
  RwkvRunStates states{fresh, fresh, std::vector<double>(fresh.size())};

  std::vector<T> prefill_out(storage.sequence[kRwkvK].size());
  prefill(storage, states.prefill.data(), prefill_out.data());
  out.prefill_out = storage_array(out_shape, prefill_out);

  out.decode_out = storage_array(out_shape, rwkv_decode_loop(in, storage, [&](const RwkvTokens<T>& x, T* o) {
                                   step(x, states.decode.data(), o);
                                 }));

  std::vector<double> reference_out(prefill_out.size());
  const std::int64_t head_state = static_cast<std::int64_t>(fresh.size()) / bh;
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t h = 0; h < bh; ++h) {
    reference(h, reference_out.data() + h * length * dim, states.reference.data() + h * head_state);
  }
  out.reference_out = make_array(out_shape, reference_out, NpyDtype::float64);
  return states;
}

// Head h's part of a matrix-state reference (RWKV-6's and -7's RwkvMatrixResult: outputs
// [length, dim], state [dim, dim]), copied where run_rwkv_conformance's `reference` writes it.
template <class MatrixResult>
void copy_matrix_result(const MatrixResult& result, double* outputs, double* state) {
  std::copy(result.outputs.data.begin(), result.outputs.data.end(), outputs);
  std::copy(result.state.data.begin(), result.state.data.end(), state);
}

// The files' shape of a matrix state: [batch, heads, dim, dim].
inline std::vector<std::int64_t> rwkv_matrix_state_shape(const ConformanceInputs& files, const RwkvInputs& in) {
  return {files.axis("batch"), in.heads, in.dim, in.dim};
}

// A parameter file [heads, dim] a generation reads beside the per-token inputs, and the drawn values
// `--generate` writes to it.
struct RwkvParameterFile {
  std::string name;
  const std::vector<float>* drawn;
};

// The adapter of a generation G, which provides:
//   G::version, G::id                      the generation and its mechanism id;
//   G::spec()                              its files, outputs and notes;
//   G::template run<T>(files, dtype)       its kernels and reference on storage type T;
//   G::parameter_files(drawn)              the parameter files --generate writes;
//   G::cuda_kernels() (CUDA builds only)   its run of the CUDA kernels on the same inputs.
template <class G>
class RwkvConformance final : public ConformanceAdapter {
 public:
  ConformanceSpec spec(const MechanismOptions& options) const override {
    require_declared_options(options, G::id);
    return G::spec();
  }

  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const override {
    spec(options);
    // RWKV-4's state is per channel, any dim fits; the matrix states of RWKV-6 and -7 are bounded by
    // the kernels' register and stack tiles.
    if (G::version != RwkvVersion::v4) require_axis_at_most(inputs, "dim", kRwkvMaxDim, G::id);
    return dtype == DType::bfloat16 ? G::template run<bf16>(inputs, dtype) : G::template run<float>(inputs, dtype);
  }

#if ARCH_BENCH_HAVE_CUDA
  CudaConformanceRun cuda_kernels() const override { return G::cuda_kernels(); }
#endif

  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const override {
    spec(options);
    const RwkvInputs drawn = make_rwkv_inputs(generated_cell(shape, options, dtype), shape.length, seed, G::version);
    std::map<std::string, NpyArray> files = rwkv_generated_files(drawn, shape.batch);
    for (const RwkvParameterFile& file : G::parameter_files(drawn)) {
      files.emplace(file.name, make_array({drawn.heads, drawn.dim}, *file.drawn, NpyDtype::float32));
    }
    return files;
  }
};

}  // namespace arch_bench
