#pragma once
// What the three RWKV generations' Mechanisms have in common, written once: the limits they check,
// the state and memory they predict and how a cell is prepared (their backends are
// cpu_and_cuda_backends(), mechanisms/common/cost_terms.hpp). Each generation's mechanism.cpp
// derives from it with its Policy (the state layout and kernels, cells.hpp) and adds only what
// differs: its description, its cost, its conformance and its capacity probe.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "core/checked_size.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/rwkv/cells.hpp"
#include "mechanisms/rwkv/cuda_plan.hpp"
#include "mechanisms/rwkv/reference_outputs.hpp"
#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/rwkv/cuda.hpp"
#endif

namespace arch_bench {

// What the policies of RWKV-6 and -7 share: a head_dim x head_dim fp32 state per head that starts at
// zero, and the fp64 recurrent reference the cells check against (reference_outputs.hpp).
struct RwkvMatrixStatePolicy {
  static std::int64_t state_floats(const RwkvShape& shape) {
    return checked_product(shape.batch_heads, shape.dim, shape.dim);
  }
  static void reset(const RwkvShape& shape, float* state) { std::fill(state, state + state_floats(shape), 0.0f); }
  static MatrixD reference(const RwkvInputs& in, std::int64_t bh, std::int64_t rows) {
    return rwkv_reference_outputs(in, bh, rows);
  }
};

template <class Policy>
class RwkvMechanism : public Mechanism {
 public:
  std::optional<std::string> unsupported_on(const Cell& cell, const std::string& backend) const override {
    if (backend == "cuda") return rwkv_cuda_unsupported(Policy::version, cell);
    return std::nullopt;
  }

  // RWKV-4's state is per channel, so any head_dim fits; the matrix states of RWKV-6 and -7 are
  // bounded by the kernels' register and stack tiles (kRwkvMaxDim).
  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (Policy::version != RwkvVersion::v4 && cell.head_dim > kRwkvMaxDim) {
      return info().id + " takes head_dim up to " + std::to_string(kRwkvMaxDim);
    }
    return std::nullopt;
  }

  // fp32 whatever the storage dtype.
  std::int64_t state_bytes(const Cell& cell) const override {
    return checked_mul(Policy::state_floats(rwkv_shape_of(cell)), 4);
  }
  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    return rwkv_predicted_peak_bytes<Policy>(cell);
  }
  std::int64_t predicted_process_bytes(const Cell& cell) const override {
    return rwkv_predicted_process_bytes<Policy>(cell);
  }

  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed, Backend& backend) const override {
#if ARCH_BENCH_HAVE_CUDA
    if (backend.name() == "cuda") return prepare_rwkv_cuda(Policy::version, cell, seed, backend);
#endif
    return prepare_rwkv_cell<Policy>(cell, seed, backend.allocator());
  }
};

}  // namespace arch_bench
