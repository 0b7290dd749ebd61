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
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/chunk_scalar_decay_workspace.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/device_token_rows.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/retnet/check.hpp"
#include "mechanisms/retnet/cuda.hpp"

namespace arch_bench {

namespace {

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
        state_(backend.allocator(), square_state_floats(cell)),
        io_(cuda_, backend.allocator(), inputs_, length_, 1) {
    zero_async(cuda_, state_.data(), state_.bytes());
    build_context_state();
  }

  void run() override {
    launch_retnet_recurrence<T>(plan_, heads_, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(),
                                io_.out.data(), cuda_.stream());
  }

  Accuracy check() const override {
    return check_retnet_decode(inputs_, heads_, length_, io_.download_out(cuda_).data());
  }

  std::vector<ByteSpan> buffers() const override { return cell_spans({state_.byte_span()}, io_); }

 private:
  // Runs the CUDA prefill over the L context tokens to leave their state in S. Its inputs and output
  // are staging memory from an allocator of their own, freed before prepare returns: they are
  // set-up, not part of the decode cell, whose peak must stay fixed as L grows (as on the CPU).
  void build_context_state() {
    if (length_ == 0) return;
    const ColumnRecurrencePlan plan = plan_retnet_cuda(inputs_.batch_heads, length_, inputs_.dim, inputs_.dim,
                                                       cuda_.device().multiprocessors);
    DeviceAllocator staging;
    DeviceQkv<T> context(cuda_, staging, inputs_, 0, length_);
    launch_retnet_recurrence<T>(plan, heads_, context.q.data(), context.k.data(), context.v.data(), state_.data(),
                                context.out.data(), cuda_.stream());
    cuda_.synchronize();  // the staging buffers are freed on return
  }

  CudaBackend& cuda_;
  std::int64_t heads_;
  std::int64_t length_;
  AttentionInputs inputs_;
  ColumnRecurrencePlan plan_;
  Buffer<float> state_;
  DeviceQkv<T> io_;  // token L's q, k, v and the step's output
};

template <class T>
class RetNetPrefillCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  RetNetPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        heads_(cell.heads),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_retnet_cuda(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim,
                               cuda_.device().multiprocessors)),
        io_(cuda_, backend.allocator(), inputs_),
        state_(backend.allocator(), square_state_floats(cell)) {
    if constexpr (std::is_same_v<T, bf16>) {
      if (retnet_cuda_prefill_is_chunked(cell)) {  // retnet_cuda_workspace_bytes counts the workspace
        const int multiprocessors = cuda_.device().multiprocessors;
        chunked_ = ChunkScalarDecayWorkspace(retnet_chunked_prefill_plan(cell, multiprocessors), backend.allocator());
        configure_retnet_chunked_prefill(*chunked_.plan);
        name_ = scalar_decay_prefill_kernel_name(*chunked_.plan, scalar_decay_state_pass_choice_of(cell), multiprocessors);
      }
    }
  }

  std::string gpu_kernel() const override { return name_; }

  void run() override {
    // A prefill starts a fresh sequence: zeroing the state is part of the timed work.
    zero_async(cuda_, state_.data(), state_.bytes());
    if constexpr (std::is_same_v<T, bf16>) {
      if (chunked_.plan) {
        launch_retnet_chunked_prefill(*chunked_.plan, heads_, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(),
                                      io_.out.data(), chunked_.chunk_states.data(), chunked_.chunk_log_decay.data(),
                                      cuda_.stream());
        return;
      }
    }
    launch_retnet_recurrence<T>(plan_, heads_, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(),
                                io_.out.data(), cuda_.stream());
  }

  Accuracy check() const override { return check_retnet_prefill(inputs_, heads_, io_.download_out(cuda_).data()); }

  std::vector<ByteSpan> buffers() const override { return cell_spans({state_.byte_span()}, io_, chunked_); }

 private:
  CudaBackend& cuda_;
  std::int64_t heads_;
  AttentionInputs inputs_;
  ColumnRecurrencePlan plan_;
  DeviceQkv<T> io_;  // every token's q, k, v and the output
  Buffer<float> state_;
  ChunkScalarDecayWorkspace chunked_;
  std::string name_ = "prefill column recurrence (fp32 SIMT)";
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_retnet_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  return prepare_cuda_cell<RetNetDecodeCudaCell, RetNetPrefillCudaCell>(retnet_cuda_unsupported, cell, seed, backend);
}

}  // namespace arch_bench
