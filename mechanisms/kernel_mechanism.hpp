#pragma once
// What the built-in mechanisms with CPU and CUDA kernels of their own (softmax_kv ... gated_deltanet;
// RWKV has mechanisms/rwkv/rwkv_mechanism.hpp) state the same way, written once: their info (backends
// cpu_and_cuda_backends()), the CUDA kernels' limits as unsupported_on, a head_dim bound, prepare
// taking the CUDA cells on the CUDA backend and the CPU cells elsewhere, the conformance adapter and
// a capacity probe that reads no options. A mechanism.cpp derives from KernelMechanism, hands it
// these parts once, and overrides only what differs: its limits, state, memory and cost (and any
// part it states otherwise, e.g. softmax_kv's --softmax-impl check before the CUDA limits).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/cuda_only.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

using PrepareCpuCells = std::unique_ptr<PreparedCell> (*)(const Cell& cell, std::uint64_t seed, Allocator& allocator);
using PrepareCudaCells = std::unique_ptr<PreparedCell> (*)(const Cell& cell, std::uint64_t seed, Backend& backend);

// prepare_cell (common/prepare_cell.hpp) over a mechanism's CPU decode and prefill cell templates.
template <template <class> class DecodeCell, template <class> class PrefillCell>
std::unique_ptr<PreparedCell> prepare_cpu_cells(const Cell& cell, std::uint64_t seed, Allocator& allocator) {
  return prepare_cell<DecodeCell, PrefillCell>(cell, seed, allocator);
}

struct KernelMechanismParts {
  std::string id;     // MechanismInfo's
  std::string title;
  StateKind state_kind = StateKind::fixed_state;
  // The largest head_dim the kernels take (their register and stack tiles), 0 for no bound.
  std::int64_t max_head_dim = 0;
  std::optional<std::string> (*cuda_unsupported)(const Cell& cell) = nullptr;  // <id>/cuda_plan.hpp
  PrepareCudaCells prepare_cuda = nullptr;  // ARCH_BENCH_CUDA_ONLY(prepare_<id>_cuda), <id>/cuda_cells.cpp
  PrepareCpuCells prepare_cpu = nullptr;    // prepare_cpu_cells<...>, or override prepare
  const ConformanceAdapter& (*conformance)() = nullptr;
  const CapacityProbe& (*capacity)() = nullptr;  // nullptr: none, or capacity_probe overridden (it reads options)
};

class KernelMechanism : public Mechanism {
 public:
  explicit KernelMechanism(KernelMechanismParts parts)
      : parts_(std::move(parts)),
        info_{parts_.id, parts_.title, parts_.state_kind, cpu_and_cuda_backends()} {}

  const MechanismInfo& info() const override { return info_; }

  // The head_dim bound; a mechanism with options adds its own checks after it.
  std::optional<std::string> unsupported(const Cell& cell) const override {
    if (parts_.max_head_dim > 0 && cell.head_dim > parts_.max_head_dim) {
      return info_.id + " takes head_dim up to " + std::to_string(parts_.max_head_dim);
    }
    return std::nullopt;
  }

  std::optional<std::string> unsupported_on(const Cell& cell, const std::string& backend) const override {
    if (backend == "cuda" && parts_.cuda_unsupported != nullptr) return parts_.cuda_unsupported(cell);
    return std::nullopt;
  }

  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed, Backend& backend) const override {
    if (backend.name() == "cuda" && parts_.prepare_cuda != nullptr) return parts_.prepare_cuda(cell, seed, backend);
    return parts_.prepare_cpu(cell, seed, backend.allocator());
  }

  const ConformanceAdapter* conformance() const override {
    return parts_.conformance != nullptr ? &parts_.conformance() : nullptr;
  }

  const CapacityProbe* capacity_probe(const MechanismOptions&) const override {
    return parts_.capacity != nullptr ? &parts_.capacity() : nullptr;
  }

 private:
  KernelMechanismParts parts_;
  MechanismInfo info_;
};

}  // namespace arch_bench
