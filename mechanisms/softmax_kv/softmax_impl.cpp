#include "mechanisms/softmax_kv/softmax_impl.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "mechanisms/common/cudnn_library.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/softmax_kv/cuda_plan.hpp"
#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/softmax_kv/cuda.hpp"
#endif
#if ARCH_BENCH_HAVE_CUDNN
#include "mechanisms/softmax_kv/cudnn_sdpa.hpp"
#endif

namespace arch_bench {

const OptionSpec& softmax_impl_option() {
  static const OptionSpec spec{
      .key = "softmax_impl",
      .type = OptionType::text,
      .default_value = std::string("auto"),
      .help = "softmax_kv on --device cuda: the kernels that run it: cudnn (cuDNN's fused attention, bfloat16), hand "
              "(arch-bench's own kernels) or auto (default: cudnn where it runs, else hand); each row records what "
              "ran (gpu_kernel). On `run`, a comma-separated list: one arm per value",
      .choices = {"auto", "hand", "cudnn"},
      .axis = true,
      .every_mode_axis = true};
  return spec;
}

const char* softmax_impl_name(SoftmaxImpl impl) { return impl == SoftmaxImpl::cudnn ? "cudnn" : "hand"; }

std::optional<std::string> cudnn_sdpa_problem(const SoftmaxImplFacts& facts) {
  if (facts.backend != "cuda") return fmt::format("cuDNN's fused attention runs on --device cuda only");
  if (!facts.library_usable) return facts.library_reason;
  // cuDNN's fused attention takes 16-bit inputs; fp32 storage stays on the hand kernels.
  if (facts.dtype != DType::bfloat16) {
    return fmt::format("cuDNN's fused attention takes bfloat16, not {} (use --dtype bfloat16)", dtype_name(facts.dtype));
  }
  // The frontend's support surface for cuDNN 9 (sdpa_support_surface.h): a multiple of 8, at most
  // 128 everywhere and 256 on Hopper; the graph build checks the device's own limit.
  if (facts.head_dim % 8 != 0 || facts.head_dim > 256) {
    return fmt::format("cuDNN's fused attention takes head_dim a multiple of 8 up to 256, not {}", facts.head_dim);
  }
  return std::nullopt;
}

std::optional<SoftmaxImplChoice> choose_softmax_impl(const SoftmaxImplFacts& facts) {
  if (facts.requested == "hand") return SoftmaxImplChoice{SoftmaxImpl::hand, {}};
  const auto problem = cudnn_sdpa_problem(facts);
  if (facts.requested == "cudnn") {
    if (problem) return std::nullopt;
    return SoftmaxImplChoice{SoftmaxImpl::cudnn, {}};
  }
  if (problem) return SoftmaxImplChoice{SoftmaxImpl::hand, *problem};
  return SoftmaxImplChoice{SoftmaxImpl::cudnn, {}};
}

SoftmaxImplFacts softmax_impl_facts(const Cell& cell, const std::string& backend) {
  SoftmaxImplFacts facts{.requested = softmax_impl_option().text(cell.options),
                         .backend = backend,
                         .dtype = cell.dtype,
                         .head_dim = cell.head_dim};
  // The library is opened only when the cell may use it: a CPU run never touches cuDNN.
  if (backend == "cuda" && facts.requested != "hand") {
    const CudnnLibrary& library = cudnn_library();
    facts.library_usable = library.usable();
    facts.library_reason = library.reason;
  }
  return facts;
}

std::optional<std::string> softmax_impl_problem(const Cell& cell, const std::string& backend) {
  const SoftmaxImplFacts facts = softmax_impl_facts(cell, backend);
  if (choose_softmax_impl(facts)) return std::nullopt;
  return fmt::format("--softmax-impl cudnn: {}", cudnn_sdpa_problem(facts).value_or("not available"));
}

#if ARCH_BENCH_HAVE_CUDA
namespace {

// The hand kernels' cell, with the name the row records: "hand: <phase> <kernel>" (and why auto did
// not take cuDNN, where it chose).
class NamedHandCell final : public PreparedCell, public NamesGpuKernel {
 public:
  NamedHandCell(std::unique_ptr<PreparedCell> cell, std::string name) : cell_(std::move(cell)), name_(std::move(name)) {}
  void run() override { cell_->run(); }
  Accuracy check() const override { return cell_->check(); }
  std::vector<ByteSpan> buffers() const override { return cell_->buffers(); }
  std::string gpu_kernel() const override { return name_; }

 private:
  std::unique_ptr<PreparedCell> cell_;
  std::string name_;
};

std::unique_ptr<PreparedCell> hand_cell(const Cell& cell, std::uint64_t seed, Backend& backend,
                                        const std::string& fallback_reason) {
  std::string name = softmax_hand_kernel_name(cell.phase, cell.dtype, cell.head_dim);
  if (!fallback_reason.empty()) name += " (auto: " + fallback_reason + ")";
  return std::make_unique<NamedHandCell>(prepare_softmax_kv_cuda(cell, seed, backend), std::move(name));
}

}  // namespace

std::unique_ptr<PreparedCell> prepare_softmax_kv_on_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  const SoftmaxImplFacts facts = softmax_impl_facts(cell, backend.name());
  const auto choice = choose_softmax_impl(facts);
  if (!choice) throw std::invalid_argument(*softmax_impl_problem(cell, backend.name()));
  if (choice->impl == SoftmaxImpl::hand) return hand_cell(cell, seed, backend, choice->fallback_reason);
#if ARCH_BENCH_HAVE_CUDNN
  try {
    return prepare_softmax_kv_cudnn(cell, seed, backend);
  } catch (const CudnnGraphUnsupported& unsupported) {
    // cuDNN refused this shape on this device (its support surface is wider than the host's check
    // knows); auto means "cuDNN where it works", so the hand kernels run and the row says why.
    if (facts.requested == "cudnn") throw;
    return hand_cell(cell, seed, backend, fmt::format("cuDNN cannot build the graph: {}", unsupported.what()));
  }
#else
  return hand_cell(cell, seed, backend, "this build has no cuDNN variant");
#endif
}
#endif

}  // namespace arch_bench
