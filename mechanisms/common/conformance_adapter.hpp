#pragma once
// What a mechanism implements to take part in `arch-bench conformance`: the files it reads and
// writes (its layout, in named axes), how it runs its own CPU kernels and fp64 reference on inputs
// read from those files, and how it draws seeded inputs for `--generate`. Each mechanism's adapter
// lives next to its kernels, in mechanisms/<id>/conformance.cpp (declared in its conformance.hpp),
// and Mechanism::conformance() returns it. A mechanism with CUDA kernels also runs them on the same
// inputs (`--device cuda`): mechanisms/<id>/cuda_conformance.cpp, which cuda_kernels() returns.
//
// The runner does the rest (runner/conformance/conformance.hpp): reading and checking the files,
// binding the axes, comparing, writing outputs and the manifest.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backends/backend.hpp"
#include "core/bf16.hpp"
#include "mechanisms/common/matrix.hpp"
#include "core/npy.hpp"
#include "core/cell.hpp"
#include "core/dtype.hpp"
#include "mechanisms/common/cuda_only.hpp"

namespace arch_bench {

// Sizes of the named axes of a layout: "batch", "heads", "length", "dim", "dv", "m", "N", ...
using ConformanceAxes = std::map<std::string, std::int64_t>;

struct ConformanceInputSpec {
  std::string name;               // file stem: "q" is q.npy
  std::vector<std::string> axes;  // its shape, in named axes
  std::string meaning;
  // Parameters (projection W, A_log, ...) are kept in fp32 by the kernels whatever the storage
  // dtype; every other input is rounded to the storage dtype first.
  bool parameter = false;
};

struct ConformanceOutputSpec {
  std::string name;
  std::vector<std::string> axes;
  NpyDtype dtype = NpyDtype::float32;
  std::string meaning;
};

struct ConformanceSpec {
  std::vector<ConformanceInputSpec> inputs;
  // Every file a run writes besides conformance.json: prefill_out, decode_out, reference_out,
  // then the final states.
  std::vector<ConformanceOutputSpec> outputs;
  std::string options;  // --describe: what a porter must know of its options beyond their declarations ("" for none)
  std::string notes;    // what a porter must know (stabilisers, relative states, ...)
};

// The input files, read and checked against the spec: every named axis bound to one size.
struct ConformanceInputs {
  ConformanceAxes axes;
  std::map<std::string, NpyArray> tensors;

  const NpyArray& at(const std::string& name) const { return tensors.at(name); }
  std::int64_t axis(const std::string& name) const { return axes.at(name); }
};

// A state the kernels leave after the last token.
struct ConformanceState {
  std::string name;                      // written as <name>.npy (and reference_<name>.npy)
  NpyArray value;                        // from the prefill, or from the decode loop when there is no prefill state
  std::optional<NpyArray> decode_value;  // the decode loop's, when `value` came from the prefill
  std::optional<NpyArray> reference;     // fp64
};

struct ConformanceOutputs {
  NpyArray prefill_out;    // causal prefill over all tokens, storage-dtype values ('<f4')
  NpyArray decode_out;     // decode steps token by token from an empty state ('<f4')
  NpyArray reference_out;  // the fp64 reference on the same (rounded) inputs ('<f8')
  std::vector<ConformanceState> states;
  MechanismOptions options;  // the options it ran with (defaults filled in)
  // Option values written to the manifest: only those the mechanism reads.
  nlohmann::json options_json = nlohmann::json::object();
  nlohmann::json details = nlohmann::json::object();  // mechanism-specific counts for the manifest
};

// What --generate asks for.
struct ConformanceShape {
  std::int64_t batch = 1;
  std::int64_t heads = 8;
  std::int64_t length = 256;
  std::int64_t dim = 64;
};

// `--device cuda`: runs the mechanism's CUDA kernels on the CUDA backend and overwrites the kernel parts
// of `out` (this adapter's run() on the same inputs, dtype and options: prefill_out, decode_out token
// by token from an empty state, the final states and their decode-loop copies), so that the manifest
// compares the GPU kernels against the same fp64 reference. Throws UsageError for sizes they do not take.
using CudaConformanceRun = void (*)(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out,
                                    Backend& cuda);

class ConformanceAdapter {
 public:
  virtual ~ConformanceAdapter() = default;
  // The layout for these options (performer's W has m/2 rows for trig features). Throws
  // UsageError for options the mechanism does not take.
  virtual ConformanceSpec spec(const MechanismOptions& options) const = 0;
  // Runs the mechanism's CPU kernels (prefill, then decode token by token from an empty state)
  // and its fp64 reference on `inputs`, whose axes are already bound and consistent. Throws
  // UsageError (before any heavy work) for sizes the kernels cannot take.
  virtual ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype,
                                 const MechanismOptions& options) const = 0;
  // Seeded inputs in the layout of spec(options). Sequence inputs are rounded through `dtype`.
  // The default draws N(0, 1) for every input, from a stream of the seed and the input's name.
  virtual std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                                   std::uint64_t seed, DType dtype) const;
  // The sizes of the named axes that --generate uses for `shape` (batch, heads, length, dim,
  // dv = dim, d_inner = heads x dim, m = the option features, N = the option state_size, each as
  // its declaration reads it).
  static ConformanceAxes generated_axes(const ConformanceShape& shape, const MechanismOptions& options);
  // The mechanism's GPU conformance (mechanisms/<id>/cuda_conformance.cpp, built with CUDA only), or
  // nullptr: none by default, and none in a build without CUDA.
  virtual CudaConformanceRun cuda_kernels() const { return nullptr; }
};

// --- helpers for the adapters -----------------------------------------------------------------

// Values as a kernel stores them: rounded to fp32, then to bf16 (nearest even) for bfloat16.
std::vector<float> to_storage_values(const NpyArray& array, DType dtype);
// Parameters: rounded to fp32.
std::vector<float> to_fp32_values(const NpyArray& array);

// An array of `shape` holding `values`, to be written as `dtype`.
template <class Container>
NpyArray make_array(std::vector<std::int64_t> shape, const Container& values, NpyDtype dtype) {
  NpyArray array;
  array.shape = std::move(shape);
  array.values.reserve(values.size());
  for (const auto& x : values) array.values.push_back(static_cast<double>(x));
  array.dtype = dtype;
  return array;
}

// Storage copies for the kernels (the values are already representable, so this is exact) and
// back: kernel outputs are written as '<f4' holding storage-dtype values.
template <class T>
std::vector<T> to_storage(const std::vector<float>& values) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = from_float<T>(values[i]);
  return out;
}
// One input file rounded to the storage dtype, twice: as floats (what the fp64 reference reads) and
// as T (what the kernels read).
template <class T>
struct StoredInput {
  std::vector<float> values;
  std::vector<T> storage;
};
template <class T>
StoredInput<T> stored_input(const ConformanceInputs& inputs, const std::string& name, DType dtype) {
  StoredInput<T> input{to_storage_values(inputs.at(name), dtype), {}};
  input.storage = to_storage<T>(input.values);
  return input;
}
template <class T>
NpyArray storage_array(std::vector<std::int64_t> shape, const std::vector<T>& values) {
  NpyArray array;
  array.shape = std::move(shape);
  array.values.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) array.values[i] = to_float(values[i]);
  array.dtype = NpyDtype::float32;
  return array;
}

// Token t of every (batch, head) of x [rows, tokens, width] into out [rows, width] (the decode
// layout), and back.
template <class T>
void gather_token(const T* x, std::int64_t rows, std::int64_t tokens, std::int64_t width, std::int64_t t, T* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < width; ++c) out[r * width + c] = x[(r * tokens + t) * width + c];
  }
}
template <class T>
void scatter_token(const T* x, std::int64_t rows, std::int64_t tokens, std::int64_t width, std::int64_t t, T* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < width; ++c) out[(r * tokens + t) * width + c] = x[r * width + c];
  }
}

// Decode steps token by token over q, k [rows, tokens, dk] and v [rows, tokens, dv]:
// step(t, q_t, k_t, v_t, o_t) sees token t of every row gathered into the decode layout, and its
// o_t [rows, dv] is scattered into the returned [rows, tokens, dv].
template <class T, class Step>
std::vector<T> decode_token_by_token(const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
                                     std::int64_t rows, std::int64_t tokens, std::int64_t dk, std::int64_t dv,
                                     Step step) {
  std::vector<T> out(v.size()), q_t(rows * dk), k_t(rows * dk), v_t(rows * dv), o_t(rows * dv);
  for (std::int64_t t = 0; t < tokens; ++t) {
    gather_token(q.data(), rows, tokens, dk, t, q_t.data());
    gather_token(k.data(), rows, tokens, dk, t, k_t.data());
    gather_token(v.data(), rows, tokens, dv, t, v_t.data());
    step(t, q_t.data(), k_t.data(), v_t.data(), o_t.data());
    scatter_token(o_t.data(), rows, tokens, dv, t, out.data());
  }
  return out;
}

// x [outer, a, b, width] -> [outer, b, a, width]: a file's layout <-> a kernel's where the two
// differ in the order of two axes (token-major against head-major, [N, length] against [length, N],
// a state's [N, P] against [P, N]); with a and b swapped it turns the result back.
std::vector<float> swap_axes(const std::vector<float>& x, std::int64_t outer, std::int64_t a, std::int64_t b,
                             std::int64_t width = 1);

// Rows [0, rows) of slice `index` of x [slices, rows, cols], widened to fp64 for a reference.
MatrixD slice_matrix(const std::vector<float>& x, std::int64_t index, std::int64_t rows, std::int64_t cols);

// q, k, v [batch, heads, length, dim] for --generate: the tokens `arch-bench run --seed seed`
// draws for a prefill cell of this shape, dtype and options (mechanisms/common/inputs.hpp).
// The prefill cell `arch-bench run` would draw inputs for, for this generated shape.
Cell generated_cell(const ConformanceShape& shape, const MechanismOptions& options, DType dtype);

std::map<std::string, NpyArray> generate_attention_inputs(const ConformanceShape& shape,
                                                          const MechanismOptions& options, std::uint64_t seed,
                                                          DType dtype);

// prefill_out, decode_out (f4) and reference_out (f8), all of `axes`: the outputs every adapter has.
std::vector<ConformanceOutputSpec> standard_outputs(const std::vector<std::string>& axes, const std::string& meaning);

// A state's two files in the spec: <name> (fp32, `meaning`) and reference_<name> (fp64).
void add_state_outputs(std::vector<ConformanceOutputSpec>& outputs, const std::string& name,
                       const std::vector<std::string>& axes, const std::string& meaning,
                       const std::string& reference_meaning);

// A state of `shape` as the prefill and the decode loop left it (fp32) and as the reference did (fp64).
ConformanceState kernel_state(const std::string& name, const std::vector<std::int64_t>& shape,
                              const std::vector<float>& prefill, const std::vector<float>& decode,
                              const std::vector<double>& reference);

// Throws UsageError "<mechanism> takes no --feature-map" when `options` holds a key that neither
// `mechanism` nor the harness declares (mechanisms/option_catalog.hpp).
void require_declared_options(const MechanismOptions& options, const std::string& mechanism);

// Throws UsageError naming the axis when `value` is above `max`.
void require_axis_at_most(const ConformanceInputs& inputs, const std::string& axis, std::int64_t max,
                          const std::string& mechanism);

// --- the adapter a mechanism derives from ------------------------------------------------------

// What every mechanism's adapter does the same way, written once: the options are checked
// (check_options) before spec, run and generate; run checks the files' dim and dv against the
// kernels' bound first; generate draws what draw() gives (q, k, v as a run draws them, by default);
// cuda_kernels() is the mechanism's GPU run. A mechanism's adapter states only what differs: its
// layout (describe), its run on checked inputs (run_checked) and any inputs beside q, k, v.
class MechanismConformance : public ConformanceAdapter {
 public:
  struct Parts {
    std::string mechanism;              // its id, for the errors
    std::int64_t max_dim = 0;           // the kernels' bound on the dim and dv axes; 0: run_checked checks its own
    CudaConformanceRun cuda = nullptr;  // ARCH_BENCH_CUDA_ONLY(<id>_conformance_on_cuda) (common/cuda_only.hpp)
  };
  explicit MechanismConformance(Parts parts) : parts_(std::move(parts)) {}

  ConformanceSpec spec(const MechanismOptions& options) const final {
    check_options(options);
    return describe(options);
  }
  ConformanceOutputs run(const ConformanceInputs& inputs, DType dtype, const MechanismOptions& options) const final {
    check_options(options);
    if (parts_.max_dim > 0) {
      require_axis_at_most(inputs, "dim", parts_.max_dim, parts_.mechanism);
      require_axis_at_most(inputs, "dv", parts_.max_dim, parts_.mechanism);
    }
    return run_checked(inputs, dtype, options);
  }
  std::map<std::string, NpyArray> generate(const ConformanceShape& shape, const MechanismOptions& options,
                                           std::uint64_t seed, DType dtype) const final {
    check_options(options);
    return draw(shape, options, seed, dtype);
  }
  CudaConformanceRun cuda_kernels() const override { return parts_.cuda; }

 protected:
  // Throws UsageError for options the mechanism does not take; by default, keys it does not declare.
  virtual void check_options(const MechanismOptions& options) const {
    require_declared_options(options, parts_.mechanism);
  }
  virtual ConformanceSpec describe(const MechanismOptions& options) const = 0;
  // run() on options and axes already checked.
  virtual ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype,
                                         const MechanismOptions& options) const = 0;
  // generate() on options already checked.
  virtual std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                               std::uint64_t seed, DType dtype) const {
    return generate_attention_inputs(shape, options, seed, dtype);
  }

 private:
  Parts parts_;
};

// The one instance of an adapter class, built on first use: what each <id>_conformance() returns.
template <class Adapter>
const ConformanceAdapter& adapter_instance() {
  static const Adapter adapter;
  return adapter;
}

}  // namespace arch_bench
