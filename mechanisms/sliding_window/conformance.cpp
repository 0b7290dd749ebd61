// sliding_window on inputs from .npy files (`arch-bench conformance`): softmax_kv's run with the
// window (attention_conformance_on_cpu): the banded prefill, the decode step token by token into an
// empty ring of min(length, W) rows per K/V head, and the fp64 banded reference.
#include "mechanisms/sliding_window/conformance.hpp"

#include "core/errors.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/sliding_window/options.hpp"
#include "mechanisms/softmax_kv/conformance.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kAxes = {"batch", "heads", "length", "dim"};
const std::vector<std::string> kKvAxes = {"batch", "kv_heads", "length", "dim"};

class SlidingWindowConformance final : public MechanismConformance {
 public:
  SlidingWindowConformance() : MechanismConformance({"sliding_window", 0, ARCH_BENCH_CUDA_ONLY(run_on_cuda)}) {}

 private:
  ConformanceSpec describe(const MechanismOptions&) const override {
    ConformanceSpec spec;
    spec.inputs = {{"q", kAxes, "queries"}, {"k", kKvAxes, "keys"}, {"v", kKvAxes, "values"}};
    spec.outputs = standard_outputs(kAxes, "o_t = sum_{t-W<i<=t} softmax_i(q_t.k_i / sqrt(dim)) v_i");
    spec.options = "window W (--window, default 4096): each query attends to itself and the W - 1 tokens before it.";
    spec.notes = "dim is at most 256. kv_heads (the K/V heads, grouped-query attention) divides heads: query head h "
                 "reads K/V head h / (heads / kv_heads). The decode state is a ring of min(length, W) rows per K/V "
                 "head, token t in row t % min(length, W); it is not written (its row order is the kernel's).";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype,
                                 const MechanismOptions& options) const override {
    return attention_conformance_on_cpu("sliding_window", window_option().integer(options), inputs, dtype);
  }

  std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                       std::uint64_t seed, DType dtype) const override {
    return generate_grouped_attention_inputs(shape, options, seed, dtype);
  }
#if ARCH_BENCH_HAVE_CUDA
  // softmax_kv's CUDA kernels with the window (mechanisms/softmax_kv/cuda_conformance.cpp).
  static void run_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& cuda) {
    attention_conformance_on_cuda("sliding_window", window_option().integer(out.options), inputs, dtype, out, cuda);
  }
#endif
};

}  // namespace

const ConformanceAdapter& sliding_window_conformance() { return adapter_instance<SlidingWindowConformance>(); }

}  // namespace arch_bench
