// The CUDA prepared cells of linear attention, mirroring the CPU cells of mechanism.cpp: the same
// seeded inputs, device buffers from the backend's allocator, run() only enqueues on the backend's
// stream (no synchronisation, allocation or copy: it is timed with events and captured in graphs),
// check() downloads the output and compares it with the same fp64 reference.
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/common/device_token_rows.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/linear_attention/options.hpp"
#include "mechanisms/linear_attention/check.hpp"
#include "mechanisms/linear_attention/cuda.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

FeatureMap map_of(const Cell& cell) {
  return parse_feature_map(linear_attention_feature_map_option().text(cell.options)).value_or(FeatureMap::elu_plus_one);
}

// Decode: (S, z) already hold the L context tokens; the step folds in token L and reads it out.
template <class T>
class LinearDecodeCudaCell final : public PreparedCell {
 public:
  LinearDecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        map_(map_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_linear_attention_decode(cell.batch_heads(), cell.head_dim, cell.head_dim)),
        state_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim * cell.head_dim)),
        normalizer_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim)),
        io_(cuda_, backend.allocator(), inputs_, length_, 1) {
    zero_async(cuda_, state_.data(), state_.bytes());
    zero_async(cuda_, normalizer_.data(), normalizer_.bytes());
    build_context_state();
  }

  void run() override {
    launch_linear_attention_decode<T>(plan_, map_, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(),
                                      normalizer_.data(), io_.out.data(), cuda_.stream());
  }

  Accuracy check() const override {
    return check_linear_attention_decode(inputs_, length_, map_, io_.download_out(cuda_).data());
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), normalizer_.byte_span()}, io_);
  }

 private:
  // Runs the CUDA prefill over the L context tokens to leave their state in (S, z). Its inputs and
  // workspace are staging memory from an allocator of their own, freed before prepare returns: they
  // are set-up, not part of the decode cell, whose peak must stay fixed as L grows (as on the CPU).
  void build_context_state() {
    if (length_ == 0) return;
    const LinearPrefillPlan plan = plan_linear_attention_prefill(inputs_.batch_heads, length_, inputs_.dim, inputs_.dim);
    DeviceAllocator staging;
    DeviceQkv<T> context(cuda_, staging, inputs_, 0, length_);
    Buffer<float> chunk_states(staging, static_cast<std::size_t>(plan.workspace_state_elements));
    Buffer<float> chunk_sums(staging, static_cast<std::size_t>(plan.workspace_sum_elements));
    launch_linear_attention_prefill<T>(plan, map_, context.q.data(), context.k.data(), context.v.data(), state_.data(),
                                       normalizer_.data(), context.out.data(), chunk_states.data(), chunk_sums.data(),
                                       cuda_.stream());
    cuda_.synchronize();  // the staging buffers are freed on return
  }

  CudaBackend& cuda_;
  FeatureMap map_;
  std::int64_t length_;
  AttentionInputs inputs_;
  LinearDecodePlan plan_;
  Buffer<float> state_, normalizer_;
  DeviceQkv<T> io_;  // token L's q, k, v and the step's output
};

template <class T>
class LinearPrefillCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  LinearPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : cuda_(cuda_backend_of(backend)),
        map_(map_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_linear_attention_prefill(cell.batch_heads(), cell.sequence_length, cell.head_dim, cell.head_dim)),
        io_(cuda_, backend.allocator(), inputs_),
        state_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim * cell.head_dim)),
        normalizer_(backend.allocator(), static_cast<std::size_t>(cell.batch_heads() * cell.head_dim)) {
    // The workspace is the cell's, from the backend's allocator, so the peak counts it
    // (linear_attention_cuda_workspace_bytes); run() allocates nothing.
    if constexpr (std::is_same_v<T, bf16>) {
      if (linear_attention_cuda_prefill_on_tensor_cores(cell)) {
        const int multiprocessors = cuda_.device().multiprocessors;
        const ScalarDecayStatePassChoice choice = scalar_decay_state_pass_choice_of(cell);
        tensor_core_ = plan_linear_attention_tensor_core_prefill(cell.batch_heads(), cell.sequence_length, cell.head_dim,
                                                                 choice, multiprocessors);
        name_ = scalar_decay_prefill_kernel_name(*tensor_core_, choice, multiprocessors);
        extended_state_ = Buffer<float>(backend.allocator(),
                                        static_cast<std::size_t>(linear_attention_extended_state_elements(*tensor_core_)));
        chunk_states_ = Buffer<float>(backend.allocator(), static_cast<std::size_t>(tensor_core_->workspace_state_elements));
        chunk_sums_ = Buffer<float>(backend.allocator(), static_cast<std::size_t>(tensor_core_->workspace_decay_elements));
        configure_linear_attention_tensor_core_prefill(*tensor_core_);
      }
    }
    if (!tensor_core_) {
      chunk_states_ = Buffer<float>(backend.allocator(), static_cast<std::size_t>(plan_.workspace_state_elements));
      chunk_sums_ = Buffer<float>(backend.allocator(), static_cast<std::size_t>(plan_.workspace_sum_elements));
    }
  }

  void run() override {
    // A prefill starts a fresh sequence: zeroing the state is part of the timed work.
    zero_async(cuda_, state_.data(), state_.bytes());
    zero_async(cuda_, normalizer_.data(), normalizer_.bytes());
    if constexpr (std::is_same_v<T, bf16>) {
      if (tensor_core_) {
        launch_linear_attention_tensor_core_prefill(*tensor_core_, map_, io_.q.data(), io_.k.data(), io_.v.data(),
                                                    state_.data(), normalizer_.data(), io_.out.data(),
                                                    extended_state_.data(), chunk_states_.data(), chunk_sums_.data(),
                                                    cuda_.stream());
        return;
      }
    }
    launch_linear_attention_prefill<T>(plan_, map_, io_.q.data(), io_.k.data(), io_.v.data(), state_.data(),
                                       normalizer_.data(), io_.out.data(), chunk_states_.data(), chunk_sums_.data(),
                                       cuda_.stream());
  }

  Accuracy check() const override {
    return check_linear_attention_prefill(inputs_, map_, io_.download_out(cuda_).data());
  }

  std::string gpu_kernel() const override { return name_; }

  std::vector<ByteSpan> buffers() const override {
    std::vector<ByteSpan> spans =
        cell_spans({state_.byte_span(), normalizer_.byte_span(), chunk_states_.byte_span()}, io_);
    if (chunk_sums_.size() > 0) spans.push_back(chunk_sums_.byte_span());  // none for the fused state pass
    if (tensor_core_) spans.push_back(extended_state_.byte_span());
    return spans;
  }

 private:
  CudaBackend& cuda_;
  FeatureMap map_;
  AttentionInputs inputs_;
  LinearPrefillPlan plan_;
  DeviceQkv<T> io_;  // every token's q, k, v and the output
  Buffer<float> state_, normalizer_;
  // The per-chunk workspace: the SIMT plan's (states, key sums), or on tensor cores the shared
  // plan's (states, log-decays) and the extended state [S | z | 0].
  Buffer<float> chunk_states_, chunk_sums_;
  std::optional<ChunkScalarDecayPlan> tensor_core_;  // set: the bf16 prefill runs on tensor cores
  Buffer<float> extended_state_;
  std::string name_ = "prefill chunkwise fp32 SIMT";
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_linear_attention_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  return prepare_cuda_cell<LinearDecodeCudaCell, LinearPrefillCudaCell>(linear_attention_cuda_unsupported, cell, seed, backend);
}

}  // namespace arch_bench
