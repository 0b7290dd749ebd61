// The CUDA prepared cells of gated_deltanet, mirroring the CPU cells of mechanism.cpp: the same
// seeded inputs and gates, device buffers from the backend's allocator, run() only enqueues on the
// backend's stream (no synchronisation, allocation or copy: it is timed with events and captured in
// graphs), check() downloads the output and compares it with the same fp64 reference.
#include <optional>
#include <type_traits>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/errors.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/device_token_rows.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/gated_deltanet/check.hpp"
#include "mechanisms/gated_deltanet/cuda.hpp"
#include "mechanisms/gated_deltanet/inputs.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

namespace {

// Decode: S already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class GatedDeltaNetDecodeCudaCell final : public PreparedCell {
 public:
  GatedDeltaNetDecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        gates_(make_gated_deltanet_gates(cell, length_ + 1, seed)),
        plan_(plan_gated_deltanet_cuda(cell.batch_heads(), 1, cell.head_dim, cell.head_dim,
                                       cuda_.device().multiprocessors)),
        state_(backend.allocator(), square_state_floats(cell)),
        g_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads())),
        beta_(backend.allocator(), g_.size()),
        io_(cuda_, backend.allocator(), inputs_, length_, 1) {
    zero_async(cuda_, state_.data(), state_.bytes());
    build_context_state();
    upload<float>(cuda_, gates_.head_rows(gates_.g, length_, 1).data(), static_cast<std::int64_t>(g_.size()),
                  g_.data());
    upload<float>(cuda_, gates_.head_rows(gates_.beta, length_, 1).data(), static_cast<std::int64_t>(beta_.size()),
                  beta_.data());
  }

  void run() override {
    launch_gated_deltanet_recurrence<T>(plan_, io_.q.data(), io_.k.data(), io_.v.data(), g_.data(), beta_.data(),
                                        state_.data(), io_.out.data(), cuda_.stream());
  }

  Accuracy check() const override {
    return check_gated_deltanet_decode(inputs_, gates_, length_, io_.download_out(cuda_).data());
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), g_.byte_span(), beta_.byte_span()}, io_);
  }

 private:
  // Runs the CUDA prefill over the L context tokens to leave their state in S. Its inputs and output
  // are staging memory from an allocator of their own, freed before prepare returns: they are
  // set-up, not part of the decode cell, whose peak must stay fixed as L grows (as on the CPU).
  void build_context_state() {
    if (length_ == 0) return;
    const ColumnRecurrencePlan plan = plan_gated_deltanet_cuda(inputs_.batch_heads, length_, inputs_.dim, inputs_.dim,
                                                               cuda_.device().multiprocessors);
    DeviceAllocator staging;
    DeviceQkv<T> context(cuda_, staging, inputs_, 0, length_);
    const std::int64_t gate_count = inputs_.batch_heads * length_;
    Buffer<float> g(staging, static_cast<std::size_t>(gate_count)), beta(staging, g.size());
    upload<float>(cuda_, gates_.head_rows(gates_.g, 0, length_).data(), gate_count, g.data());
    upload<float>(cuda_, gates_.head_rows(gates_.beta, 0, length_).data(), gate_count, beta.data());
    launch_gated_deltanet_recurrence<T>(plan, context.q.data(), context.k.data(), context.v.data(), g.data(),
                                        beta.data(), state_.data(), context.out.data(), cuda_.stream());
    cuda_.synchronize();  // the staging buffers are freed on return
  }

  CudaBackend& cuda_;
  std::int64_t length_;
  AttentionInputs inputs_;
  GatedDeltaNetGates gates_;
  ColumnRecurrencePlan plan_;
  Buffer<float> state_, g_, beta_;
  DeviceQkv<T> io_;  // token L's q, k, v and the step's output
};

template <class T>
class GatedDeltaNetPrefillCudaCell final : public PreparedCell {
 public:
  GatedDeltaNetPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        gates_(make_gated_deltanet_gates(cell, cell.sequence_length, seed)),
        plan_(plan_gated_deltanet_cuda(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim,
                                       cuda_.device().multiprocessors)),
        io_(cuda_, backend.allocator(), inputs_),
        g_(backend.allocator(), gates_.g.size()),
        beta_(backend.allocator(), gates_.beta.size()),
        state_(backend.allocator(), square_state_floats(cell)) {
    if constexpr (std::is_same_v<T, bf16>) {
      if (gated_deltanet_cuda_prefill_is_chunked(cell)) {
        // The workspace is the cell's, from the backend's allocator, so the peak counts it
        // (gated_deltanet_cuda_workspace_bytes); run() allocates nothing.
        chunked_ = gated_deltanet_chunked_prefill_plan(cell, cuda_.device().multiprocessors);
        workspace_ = Buffer<bf16>(backend.allocator(), static_cast<std::size_t>(chunked_->workspace_bf16_elements()));
        chunk_log_decay_ =
            Buffer<float>(backend.allocator(), static_cast<std::size_t>(chunked_->workspace_decay_elements));
        configure_gated_deltanet_chunked_prefill(*chunked_);
      }
    }
    upload<float>(cuda_, gates_.g.data(), static_cast<std::int64_t>(g_.size()), g_.data());
    upload<float>(cuda_, gates_.beta.data(), static_cast<std::int64_t>(beta_.size()), beta_.data());
  }

  void run() override {
    // A prefill starts a fresh sequence: zeroing the state is part of the timed work.
    zero_async(cuda_, state_.data(), state_.bytes());
    if constexpr (std::is_same_v<T, bf16>) {
      if (chunked_) {
        launch_gated_deltanet_chunked_prefill(*chunked_, io_.q.data(), io_.k.data(), io_.v.data(), g_.data(),
                                              beta_.data(), state_.data(), io_.out.data(), workspace_.data(),
                                              chunk_log_decay_.data(), cuda_.stream());
        return;
      }
    }
    launch_gated_deltanet_recurrence<T>(plan_, io_.q.data(), io_.k.data(), io_.v.data(), g_.data(), beta_.data(),
                                        state_.data(), io_.out.data(), cuda_.stream());
  }

  Accuracy check() const override {
    return check_gated_deltanet_prefill(inputs_, gates_, io_.download_out(cuda_).data());
  }

  std::vector<ByteSpan> buffers() const override {
    std::vector<ByteSpan> spans = cell_spans({g_.byte_span(), beta_.byte_span(), state_.byte_span()}, io_);
    if (chunked_) {
      spans.push_back(workspace_.byte_span());
      spans.push_back(chunk_log_decay_.byte_span());
    }
    return spans;
  }

 private:
  CudaBackend& cuda_;
  AttentionInputs inputs_;
  GatedDeltaNetGates gates_;
  ColumnRecurrencePlan plan_;
  DeviceQkv<T> io_;  // every token's q, k, v and the output
  Buffer<float> g_, beta_, state_;
  std::optional<ChunkDeltaRulePlan> chunked_;  // set: the bf16 prefill runs chunkwise on tensor cores
  Buffer<bf16> workspace_;                     // its per-chunk operands (empty otherwise)
  Buffer<float> chunk_log_decay_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_gated_deltanet_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  return prepare_cuda_cell<GatedDeltaNetDecodeCudaCell, GatedDeltaNetPrefillCudaCell>(gated_deltanet_cuda_unsupported, cell, seed, backend);
}

}  // namespace arch_bench
