// The CUDA prepared cells of Performer, mirroring the CPU cells of mechanism.cpp: the same seeded
// inputs and projection, device buffers from the backend's allocator, run() only enqueues on the
// backend's stream (no synchronisation, allocation or copy), check() downloads the output and
// compares it with the same fp64 reference, and adds the same approximation error vs softmax.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "mechanisms/common/compare.hpp"
#include "mechanisms/performer/options.hpp"
#include "mechanisms/performer/reference_heads.hpp"
#include "mechanisms/common/device_token_rows.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cuda_cell.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mechanism.hpp"
#include "mechanisms/performer/approximation.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

// Exact softmax rows per head compared in a prefill check (as the CPU cell does).
constexpr std::int64_t kSoftmaxRowsChecked = 64;

PerformerShape shape_of(const Cell& cell) {
  return {cell.batch_heads(), cell.head_dim, cell.head_dim, performer_features_option().integer(cell.options),
          parse_performer_features(performer_feature_map_option().text(cell.options)).value_or(PerformerFeatures::favor_plus)};
}

// The cell's projection (fp64 rows for the reference, exactly the fp32 values the kernel reads) and
// its packed copy on the device.
struct DeviceProjection {
  MatrixD rows;
  Buffer<float> packed;
  DeviceProjection(CudaBackend& cuda, const PerformerShape& shape, std::uint64_t seed)
      : rows(performer_projection(shape.kind, shape.features, shape.dk, seed)),
        packed(cuda.allocator(), static_cast<std::size_t>(performer_projection_floats(shape))) {
    std::vector<float> host(packed.size());
    pack_performer_projection(rows, host.data());
    upload<float>(cuda, host.data(), static_cast<std::int64_t>(host.size()), packed.data());
  }
};

// Rows whose phi(q).z was <= 0 or not finite, as the CPU kernels count them.
std::int64_t count_nonpositive(const std::vector<float>& denominators) {
  std::int64_t count = 0;
  for (const float d : denominators) count += !(d > 0.0f) || !std::isfinite(d) ? 1 : 0;
  return count;
}

void add_approximation(Accuracy& accuracy, const SoftmaxApproximationError& error, std::int64_t nonpositive) {
  accuracy.nonpositive_denominators = nonpositive;
  accuracy.approx_rel_l2_vs_softmax = error.rel_l2;
  accuracy.approx_max_abs_vs_softmax = error.max_abs;
}

// Decode: (S, z, M) already hold the L context tokens; the step folds in token L and reads it out.
template <class T>
class PerformerDecodeCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  PerformerDecodeCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : name_(performer_gpu_kernel_name(cell)),
        cuda_(cuda_backend_of(backend)),
        shape_(shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        plan_(plan_performer_decode(shape_)),
        projection_(cuda_, shape_, seed),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads * shape_.features * shape_.dv)),
        normalizer_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads * shape_.features)),
        running_max_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads)),
        denominators_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads)),
        q_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads * shape_.dk)),
        k_(backend.allocator(), q_.size()),
        v_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads * shape_.dv)),
        out_(backend.allocator(), v_.size()) {
    launch_performer_reset_state(shape_.batch_heads, shape_.features, shape_.dv, state_.data(), normalizer_.data(),
                                 running_max_.data(), cuda_.stream());
    build_context_state();
    upload_token_rows<T>(cuda_, inputs_, length_, 1, q_.data(), k_.data(), v_.data());
    poison(cuda_, out_.data(), out_.bytes());
    poison(cuda_, denominators_.data(), denominators_.bytes());
  }

  void run() override {
    launch_performer_decode<T>(plan_, projection_.packed.data(), q_.data(), k_.data(), v_.data(), state_.data(),
                               normalizer_.data(), running_max_.data(), out_.data(), denominators_.data(),
                               cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    const std::vector<float> denominators =
        download<float>(cuda_, denominators_.data(), static_cast<std::int64_t>(denominators_.size()));
    ErrorAccumulator errors;
    const std::vector<PerformerResult> refs = performer_reference_heads(inputs_, length_ + 1, shape_, projection_.rows);
    for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
      errors.add_row(out.data() + bh * shape_.dv, refs[bh].outputs.row(length_), shape_.dv);
    }
    Accuracy accuracy = errors.finish();
    add_approximation(accuracy, approximation_vs_softmax_decode(inputs_, out.data()), count_nonpositive(denominators));
    return accuracy;
  }

  std::vector<ByteSpan> buffers() const override {
    return {projection_.packed.byte_span(), state_.byte_span(), normalizer_.byte_span(), running_max_.byte_span(),
            denominators_.byte_span(),      q_.byte_span(),     k_.byte_span(),          v_.byte_span(),
            out_.byte_span()};
  }

  std::string gpu_kernel() const override { return name_; }

 private:
  // The CUDA prefill over the L context tokens leaves their state in (S, z, M). Its inputs and
  // workspace are staging memory from an allocator of their own, freed before prepare returns:
  // set-up, not part of the decode cell, whose peak must stay fixed as L grows (as on the CPU).
  void build_context_state() {
    if (length_ == 0) return;
    const PerformerPrefillPlan plan = plan_performer_prefill(shape_, length_);
    DeviceAllocator staging;
    const std::int64_t count = shape_.batch_heads * length_ * shape_.dk;
    Buffer<T> q(staging, static_cast<std::size_t>(count)), k(staging, q.size()), v(staging, q.size()),
        out(staging, q.size());
    Buffer<float> workspace(staging, static_cast<std::size_t>(plan.workspace.floats));
    upload_token_rows<T>(cuda_, inputs_, 0, length_, q.data(), k.data(), v.data());
    launch_performer_prefill<T>(plan, projection_.packed.data(), nullptr, q.data(), k.data(), v.data(), state_.data(),
                                normalizer_.data(), running_max_.data(), out.data(), workspace.data(), cuda_.stream());
    cuda_.synchronize();  // the staging buffers are freed on return
  }

  std::string name_;
  CudaBackend& cuda_;
  PerformerShape shape_;
  std::int64_t length_;
  AttentionInputs inputs_;
  PerformerDecodePlan plan_;
  DeviceProjection projection_;
  Buffer<float> state_, normalizer_, running_max_, denominators_;
  Buffer<T> q_, k_, v_, out_;
};

template <class T>
class PerformerPrefillCudaCell final : public PreparedCell, public NamesGpuKernel {
 public:
  PerformerPrefillCudaCell(const Cell& cell, std::uint64_t seed, Backend& backend)
      : name_(performer_gpu_kernel_name(cell)),
        cuda_(cuda_backend_of(backend)),
        shape_(shape_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        plan_(plan_performer_prefill(shape_, cell.sequence_length,
                                     std::is_same_v<T, bf16> ? performer_cuda_prefill_path(cell) : PerformerPrefillPath::simt)),
        projection_(cuda_, shape_, seed),
        q_(backend.allocator(), inputs_.q.size()),
        k_(backend.allocator(), inputs_.k.size()),
        v_(backend.allocator(), inputs_.v.size()),
        out_(backend.allocator(), inputs_.v.size()),
        state_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads * shape_.features * shape_.dv)),
        normalizer_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads * shape_.features)),
        running_max_(backend.allocator(), static_cast<std::size_t>(shape_.batch_heads)),
        workspace_(backend.allocator(), static_cast<std::size_t>(plan_.workspace.floats)) {
    upload<T>(cuda_, inputs_.q.data(), static_cast<std::int64_t>(q_.size()), q_.data());
    upload<T>(cuda_, inputs_.k.data(), static_cast<std::int64_t>(k_.size()), k_.data());
    upload<T>(cuda_, inputs_.v.data(), static_cast<std::int64_t>(v_.size()), v_.data());
    poison(cuda_, out_.data(), out_.bytes());
    poison(cuda_, workspace_.data(), workspace_.bytes());
    if (plan_.prefill_path == PerformerPrefillPath::tensor_core_bf16) {
      // W is the cell's: split once here, outside the timed run (cuda_plan.hpp says why two parts).
      split_ = Buffer<bf16>(backend.allocator(), static_cast<std::size_t>(plan_.tensor_core.split_elements()));
      launch_performer_split_projection(plan_.tensor_core, projection_.packed.data(), split_.data(), cuda_.stream());
    }
  }

  void run() override {
    // A prefill starts a fresh sequence: emptying the state is part of the timed work.
    launch_performer_reset_state(shape_.batch_heads, shape_.features, shape_.dv, state_.data(), normalizer_.data(),
                                 running_max_.data(), cuda_.stream());
    launch_performer_prefill<T>(plan_, projection_.packed.data(), split_.data(), q_.data(), k_.data(), v_.data(),
                                state_.data(), normalizer_.data(), running_max_.data(), out_.data(), workspace_.data(),
                                cuda_.stream());
  }

  Accuracy check() const override {
    const std::vector<float> out = download<T>(cuda_, out_.data(), static_cast<std::int64_t>(out_.size()));
    const std::vector<float> denominators = download<float>(cuda_, workspace_.data() + plan_.workspace.denominators,
                                                            shape_.batch_heads * inputs_.tokens);
    ErrorAccumulator errors;
    const std::vector<PerformerResult> refs = performer_reference_heads(inputs_, inputs_.tokens, shape_, projection_.rows);
    for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
      for (std::int64_t t = 0; t < inputs_.tokens; ++t) {
        errors.add_row(out.data() + (bh * inputs_.tokens + t) * shape_.dv, refs[bh].outputs.row(t), shape_.dv);
      }
    }
    Accuracy accuracy = errors.finish();
    add_approximation(accuracy, approximation_vs_softmax_prefill(inputs_, out.data(), kSoftmaxRowsChecked),
                      count_nonpositive(denominators));
    return accuracy;
  }

  std::vector<ByteSpan> buffers() const override {
    std::vector<ByteSpan> spans{projection_.packed.byte_span(), q_.byte_span(),           k_.byte_span(),
                                v_.byte_span(),                 out_.byte_span(),         state_.byte_span(),
                                normalizer_.byte_span(),        running_max_.byte_span(), workspace_.byte_span()};
    if (plan_.prefill_path == PerformerPrefillPath::tensor_core_bf16) spans.push_back(split_.byte_span());
    return spans;
  }

  std::string gpu_kernel() const override { return name_; }

 private:
  std::string name_;
  CudaBackend& cuda_;
  PerformerShape shape_;
  AttentionInputs inputs_;
  PerformerPrefillPlan plan_;
  DeviceProjection projection_;
  Buffer<T> q_, k_, v_, out_;
  Buffer<float> state_, normalizer_, running_max_, workspace_;
  Buffer<bf16> split_;  // W_hi, W_lo: allocated on the tensor-core path only (else null)
};

}  // namespace

std::unique_ptr<PreparedCell> prepare_performer_cuda(const Cell& cell, std::uint64_t seed, Backend& backend) {
  return prepare_cuda_cell<PerformerDecodeCudaCell, PerformerPrefillCudaCell>(performer_cuda_unsupported, cell, seed, backend);
}

}  // namespace arch_bench
