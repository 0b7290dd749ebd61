// The CUDA prepared cells of retnet, mirroring the CPU cells of mechanism.cpp: the same seeded
// inputs, device buffers from the backend's allocator, run() only enqueues on the backend's stream
// (no synchronisation, allocation or copy: it is timed with events and captured in graphs), check()
// downloads the output and compares it with the same fp64 reference.
#include <type_traits>
#include <vector>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/errors.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/chunk_scalar_decay_workspace.hpp"
#include "mechanisms/common/device_token_rows.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/retnet/check.hpp"
#include "mechanisms/retnet/cuda.hpp"

namespace arch_bench {

namespace {

std::size_t state_elements(const Cell& cell) {
  return static_cast<std::size_t>(checked_product(cell.batch_heads(), cell.head_dim, cell.head_dim));
}

// Decode: S already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class RetNetDecodeCudaCell final : public PreparedCell {
 public:
  RetNetDecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        heads_(cell.heads),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_retnet_cuda(cell.batch_heads(), 1, cell.head_dim, cell.head_dim, cuda_.device().multiprocessors)),
        state_(backend.allocator(), state_elements(cell)),
        q_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim)),
        k_(backend.allocator(), q_.size()),
        v_(backend.allocator(), q_.size()),
        out_(backend.allocator(), q_.size()) {
    zero_async(cuda_, state_.data(), state_.bytes());
    build_context_state();
    upload_token_rows<T>(cuda_, inputs_, length_, 1, q_.data(), k_.data(), v_.data());
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    launch_retnet_recurrence<T>(plan_, heads_, q_.data(), k_.data(), v_.data(), state_.data(), out_.data(),
                                cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_retnet_decode(inputs_, heads_, length_, out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return {state_.byte_span(), q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  // Runs the CUDA prefill over the L context tokens to leave their state in S. Its inputs and output
  // are staging memory from an allocator of their own, freed before prepare returns: they are
  // set-up, not part of the decode cell, whose peak must stay fixed as L grows (as on the CPU).
  void build_context_state() {
    if (length_ == 0) return;
    const ColumnRecurrencePlan plan = plan_retnet_cuda(inputs_.batch_heads, length_, inputs_.dim, inputs_.dim,
                                                       cuda_.device().multiprocessors);
    DeviceAllocator staging;
    const std::int64_t count = inputs_.batch_heads * length_ * inputs_.dim;
    Buffer<T> q(staging, static_cast<std::size_t>(count)), k(staging, q.size()), v(staging, q.size()),
        out(staging, q.size());
    upload_token_rows<T>(cuda_, inputs_, 0, length_, q.data(), k.data(), v.data());
    launch_retnet_recurrence<T>(plan, heads_, q.data(), k.data(), v.data(), state_.data(), out.data(), cuda_.stream());
    cuda_.synchronize();  // the staging buffers are freed on return
  }

  CudaBackend& cuda_;
  std::int64_t heads_;
  std::int64_t length_;
  AttentionInputs inputs_;
  ColumnRecurrencePlan plan_;
  Buffer<float> state_;
  Buffer<T> q_, k_, v_, out_;
};

template <class T>
class RetNetPrefillCudaCell final : public PreparedCell {
 public:
  RetNetPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        heads_(cell.heads),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_retnet_cuda(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim,
                               cuda_.device().multiprocessors)),
        q_(backend.allocator(), inputs_.q.size()),
        k_(backend.allocator(), inputs_.k.size()),
        v_(backend.allocator(), inputs_.v.size()),
        out_(backend.allocator(), inputs_.v.size()),
        state_(backend.allocator(), state_elements(cell)) {
    if constexpr (std::is_same_v<T, bf16>) {
      if (retnet_cuda_prefill_is_chunked(cell)) {  // retnet_cuda_workspace_bytes counts the workspace
        chunked_ = ChunkScalarDecayWorkspace(retnet_chunked_prefill_plan(cell), backend.allocator());
        configure_retnet_chunked_prefill(*chunked_.plan);
      }
    }
    upload<T>(cuda_, inputs_.q.data(), static_cast<std::int64_t>(q_.size()), q_.data());
    upload<T>(cuda_, inputs_.k.data(), static_cast<std::int64_t>(k_.size()), k_.data());
    upload<T>(cuda_, inputs_.v.data(), static_cast<std::int64_t>(v_.size()), v_.data());
    poison(cuda_, out_.data(), out_.bytes());
  }

  void run() override {
    // A prefill starts a fresh sequence: zeroing the state is part of the timed work.
    zero_async(cuda_, state_.data(), state_.bytes());
    if constexpr (std::is_same_v<T, bf16>) {
      if (chunked_.plan) {
        launch_retnet_chunked_prefill(*chunked_.plan, heads_, q_.data(), k_.data(), v_.data(), state_.data(),
                                      out_.data(), chunked_.chunk_states.data(), chunked_.chunk_log_decay.data(),
                                      cuda_.stream());
        return;
      }
    }
    launch_retnet_recurrence<T>(plan_, heads_, q_.data(), k_.data(), v_.data(), state_.data(), out_.data(),
                                cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    return check_retnet_prefill(inputs_, heads_, out.data());
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span(), state_.byte_span()}, chunked_);
  }

 private:
  CudaBackend& cuda_;
  std::int64_t heads_;
  AttentionInputs inputs_;
  ColumnRecurrencePlan plan_;
  Buffer<T> q_, k_, v_, out_;
  Buffer<float> state_;
  ChunkScalarDecayWorkspace chunked_;
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_retnet_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  if (auto why = retnet_cuda_unsupported(cell)) throw CellFailure("mechanism_error", *why);  // the plan skips these first
  return prepare_cell<RetNetDecodeCudaCell, RetNetPrefillCudaCell>(cell, seed, backend);
}

}  // namespace arch_bench
