#pragma once
// A GPU prepared cell that can run more than one implementation (softmax_kv: hand-written kernels or
// cuDNN's fused attention) says which one it runs; the row records it as `gpu_kernel`. A separate
// interface, found by dynamic_cast, rather than a new virtual of PreparedCell: plugins built against
// the SDK's PreparedCell keep their layout, and cells with one implementation state nothing.
#include <string>

namespace arch_bench {

class NamesGpuKernel {
 public:
  virtual ~NamesGpuKernel() = default;
  // e.g. "cudnn_sdpa (cuDNN 9.19.0)", "hand: prefill mma_bf16", "hand: decode simt (auto: <why not cuDNN>)".
  virtual std::string gpu_kernel() const = 0;
};

}  // namespace arch_bench
