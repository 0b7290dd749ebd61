#pragma once
// Which implementation runs softmax_kv on the GPU: the hand-written kernels (cuda.cu) or cuDNN's
// fused attention (cudnn_sdpa.hpp), the library a user would deploy and so the baseline every
// fixed-state mechanism is measured against where it works. The choice is a plain function of a few
// facts, tested on the CPU; the row records what ran (gpu_kernel).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "core/dtype.hpp"
#include "core/options.hpp"

namespace arch_bench {

class Backend;
class PreparedCell;

// softmax_impl: auto (default), hand or cudnn. An axis: `run --softmax-impl hand,cudnn` measures both
// in one run, one arm each.
const OptionSpec& softmax_impl_option();

enum class SoftmaxImpl { hand, cudnn };
const char* softmax_impl_name(SoftmaxImpl impl);  // "hand" | "cudnn"

// What the choice depends on.
struct SoftmaxImplFacts {
  std::string requested;  // the option's value: auto, hand or cudnn
  std::string backend;    // cpu or cuda
  DType dtype = DType::bfloat16;
  std::int64_t head_dim = 0;
  bool library_usable = false;  // cudnn_library().usable() (and the variant built)
  std::string library_reason;   // why not, when not
};

// Why cuDNN's fused attention cannot run these facts (nullopt: it can, as far as the host knows; the
// graph build at prepare time has the last word).
std::optional<std::string> cudnn_sdpa_problem(const SoftmaxImplFacts& facts);

struct SoftmaxImplChoice {
  SoftmaxImpl impl = SoftmaxImpl::hand;
  std::string fallback_reason;  // auto only: why cuDNN was not taken (empty when it was, or not asked)
};

// auto: cudnn where cudnn_sdpa_problem() finds nothing, else hand; hand: hand; cudnn: cudnn, or
// nullopt when it cannot run (the cell is unsupported; softmax_impl_problem() says why).
std::optional<SoftmaxImplChoice> choose_softmax_impl(const SoftmaxImplFacts& facts);

// Why the cell's --softmax-impl cannot run on `backend` (cudnn asked where it cannot run), or nullopt:
// what Mechanism::unsupported_on returns, so `run` refuses the cell with the reason.
std::optional<std::string> softmax_impl_problem(const Cell& cell, const std::string& backend);

// The facts of `cell` on `backend` with this process's cuDNN (cudnn_library()).
SoftmaxImplFacts softmax_impl_facts(const Cell& cell, const std::string& backend);

#if ARCH_BENCH_HAVE_CUDA
// The CUDA prepared cell of the implementation chosen for `cell`. auto falls back to the hand kernels
// when the cuDNN graph cannot be built for the cell (the reason goes into the row's gpu_kernel);
// an explicit cudnn that cannot be built fails the cell with cuDNN's message.
std::unique_ptr<PreparedCell> prepare_softmax_kv_on_cuda(const Cell& cell, std::uint64_t seed, Backend& backend);
#endif

}  // namespace arch_bench
