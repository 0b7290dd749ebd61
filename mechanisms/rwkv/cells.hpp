#pragma once
// The prepared cells of the three RWKV generations: one decode cell and one prefill cell, each a
// template over the generation's Policy (its kernels, state and fp64 reference) and the storage
// type. A Policy provides:
//   static constexpr RwkvVersion version; static constexpr bool uses_w, uses_u;
//   static std::int64_t state_floats(const RwkvShape&);
//   static void reset(const RwkvShape&, float* state);                 // a fresh sequence
//   template <class T> static void decode(shape, params, tokens, state, out);
//   template <class T> static void prefill(shape, params, count, tokens, state, out);
//   static MatrixD reference(const RwkvInputs&, std::int64_t bh, std::int64_t rows);   // [rows, dim]
#include <algorithm>
#include <array>
#include <vector>

#include "core/bf16.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/cell_spans.hpp"
#include "mechanisms/common/check_heads.hpp"
#include "mechanisms/common/cost_terms.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/rwkv/input_buffers.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/kernels.hpp"
#include "mechanisms/rwkv/rwkv6/chunk_plan.hpp"
#include "mechanisms/rwkv/rwkv7/chunk_plan.hpp"

namespace arch_bench {

inline RwkvShape rwkv_shape_of(const Cell& cell) { return {cell.batch_heads(), cell.heads, cell.head_dim}; }

// The parameters in tracked fp32 buffers (only those the generation reads).
template <class Policy>
struct RwkvParameterBuffers {
  RwkvParameterBuffers(const RwkvInputs& inputs, Allocator& allocator) {
    if (Policy::uses_w) {
      w = Buffer<float>(allocator, inputs.w.size());
      std::copy(inputs.w.begin(), inputs.w.end(), w.data());
    }
    if (Policy::uses_u) {
      u = Buffer<float>(allocator, inputs.u.size());
      std::copy(inputs.u.begin(), inputs.u.end(), u.data());
    }
  }
  RwkvParameters view() const { return {w.data(), u.data()}; }
  void add_spans(std::vector<ByteSpan>& spans) const {
    if (Policy::uses_w) spans.push_back(w.byte_span());
    if (Policy::uses_u) spans.push_back(u.byte_span());
  }
  Buffer<float> w, u;
};

// Per-token inputs in storage T, one buffer per input the generation reads.
template <class T>
struct RwkvTokenBuffers : RwkvInputBuffers<T> {
  RwkvTokenBuffers(RwkvVersion version, std::size_t count, Allocator& allocator) : RwkvInputBuffers<T>(version) {
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (this->used[i]) this->buffers[i] = Buffer<T>(allocator, count);
    }
  }
};

// Decode: the state already holds the L context tokens; the step folds in token L and reads it out.
template <class Policy, class T>
class RwkvDecodeCell final : public PreparedCell {
 public:
  RwkvDecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(rwkv_shape_of(cell)),
        length_(cell.sequence_length),
        inputs_(make_rwkv_inputs(cell, length_ + 1, seed, Policy::version)),
        params_(inputs_, allocator),
        state_(allocator, checked_count(Policy::state_floats(shape_))),
        tokens_(Policy::version, checked_count(checked_mul(shape_.batch_heads, shape_.dim)), allocator),
        out_(allocator, tokens_.buffers[kRwkvK].size()) {
    Policy::reset(shape_, state_.data());
    build_context_state();
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (!tokens_.used[i]) continue;
      for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
        store(inputs_.at(static_cast<RwkvInput>(i), bh, length_), shape_.dim,
              tokens_.buffers[i].data() + bh * shape_.dim);
      }
    }
  }

  void run() override { Policy::decode(shape_, params_.view(), tokens_.view(), state_.data(), out_.data()); }

  Accuracy check() const override {
    return check_decode_heads(out_.data(), shape_.batch_heads, shape_.dim, length_,
                              [&](std::int64_t bh, std::int64_t rows) { return Policy::reference(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), out_.byte_span()}, params_, tokens_);
  }

 private:
  // Runs the prefill over the L context tokens (staging memory outside the tracked allocator: it is
  // set-up, not part of the decode cell) to leave their state in place.
  void build_context_state() {
    if (length_ == 0) return;
    const std::int64_t dim = shape_.dim;
    const std::size_t count = checked_count(checked_product(shape_.batch_heads, length_, dim));
    std::array<std::vector<T>, kRwkvInputCount> staged;
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (!tokens_.used[i]) continue;
      staged[i].resize(count);
      for (std::int64_t bh = 0; bh < shape_.batch_heads; ++bh) {
        store(inputs_.at(static_cast<RwkvInput>(i), bh, 0), length_ * dim, staged[i].data() + bh * length_ * dim);
      }
    }
    std::vector<T> out(count);
    const RwkvTokens<T> x{staged[kRwkvR].data(),     staged[kRwkvK].data(),     staged[kRwkvV].data(),
                          staged[kRwkvDecay].data(), staged[kRwkvKappa].data(), staged[kRwkvIclr].data()};
    Policy::prefill(shape_, params_.view(), length_, x, state_.data(), out.data());
  }

  RwkvShape shape_;
  std::int64_t length_;
  RwkvInputs inputs_;
  RwkvParameterBuffers<Policy> params_;
  Buffer<float> state_;
  RwkvTokenBuffers<T> tokens_;
  Buffer<T> out_;
};

template <class Policy, class T>
class RwkvPrefillCell final : public PreparedCell {
 public:
  RwkvPrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : shape_(rwkv_shape_of(cell)),
        inputs_(make_rwkv_inputs(cell, cell.sequence_length, seed, Policy::version)),
        params_(inputs_, allocator),
        tokens_(Policy::version, inputs_.sequence[kRwkvK].size(), allocator),
        out_(allocator, inputs_.sequence[kRwkvK].size()),
        state_(allocator, checked_count(Policy::state_floats(shape_))) {
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (tokens_.used[i]) {
        store(inputs_.sequence[i].data(), static_cast<std::int64_t>(inputs_.sequence[i].size()),
              tokens_.buffers[i].data());
      }
    }
  }

  void run() override {
    // A prefill starts a fresh sequence: resetting the state is part of the timed work.
    Policy::reset(shape_, state_.data());
    Policy::prefill(shape_, params_.view(), inputs_.tokens, tokens_.view(), state_.data(), out_.data());
  }

  Accuracy check() const override {
    return check_prefill_heads(out_.data(), shape_.batch_heads, inputs_.tokens, shape_.dim,
                               [&](std::int64_t bh, std::int64_t rows) { return Policy::reference(inputs_, bh, rows); });
  }

  std::vector<ByteSpan> buffers() const override {
    return cell_spans({state_.byte_span(), out_.byte_span()}, params_, tokens_);
  }

 private:
  RwkvShape shape_;
  RwkvInputs inputs_;
  RwkvParameterBuffers<Policy> params_;
  RwkvTokenBuffers<T> tokens_;
  Buffer<T> out_;
  Buffer<float> state_;
};

// Predicted peak bytes of either cell: state + parameters + the per-token inputs and the output;
// for RWKV-6 and RWKV-7 also the workspace of the CUDA bf16 prefill's chunkwise form (rwkv6: one
// state per chunk, rwkv6/chunk_plan.hpp; rwkv7: 4 d-wide and 3 chunk-wide bf16 rows per token, rwkv7/chunk_plan.hpp), counted on every backend so a plan's prediction does not depend on where it
// runs (an over-estimate on the CPU).
template <class Policy>
std::int64_t rwkv_predicted_peak_bytes(const Cell& cell) {
  const RwkvShape shape = rwkv_shape_of(cell);
  const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
  const std::int64_t tokens = run_tokens(cell);
  const auto used = rwkv_inputs_used(Policy::version);
  const std::int64_t streams = 1 + std::count(used.begin(), used.end(), true);
  const std::int64_t parameters = (Policy::uses_w ? 1 : 0) + (Policy::uses_u ? 1 : 0);
  const std::int64_t workspace = Policy::version == RwkvVersion::v6   ? rwkv6_cuda_workspace_bytes(cell)
                                 : Policy::version == RwkvVersion::v7 ? rwkv7_cuda_workspace_bytes(cell)
                                                                      : 0;
  return checked_sum(checked_mul(Policy::state_floats(shape), 4), checked_product(parameters, cell.heads, cell.head_dim, 4),
                     checked_product(streams, shape.batch_heads, tokens, shape.dim, e), workspace);
}

// Predicted process bytes of either cell (mechanisms/process_bytes.hpp): the drawn streams in fp32
// (RWKV-4 draws r with k and v and drops it: three at the peak), the used streams and the output
// staged for a decode cell's context, one head's fp64 reference (its streams, output and state).
template <class Policy>
std::int64_t rwkv_predicted_process_bytes(const Cell& cell) {
  const auto used = rwkv_inputs_used(Policy::version);
  const std::int64_t streams = std::count(used.begin(), used.end(), true);
  const std::int64_t drawn = std::max<std::int64_t>(streams, 3);
  return ProcessBytes{rwkv_predicted_peak_bytes<Policy>(cell), drawn_attention_bytes(cell, drawn),
                      staged_context_bytes(cell, streams + 1), reference_head_bytes(cell, streams + 3)}
      .total();
}

template <class Policy>
std::unique_ptr<PreparedCell> prepare_rwkv_cell(const Cell& cell, std::uint64_t seed, Allocator& allocator) {
  if (cell.phase == Phase::decode) {
    if (cell.dtype == DType::bfloat16) return std::make_unique<RwkvDecodeCell<Policy, bf16>>(cell, seed, allocator);
    return std::make_unique<RwkvDecodeCell<Policy, float>>(cell, seed, allocator);
  }
  if (cell.dtype == DType::bfloat16) return std::make_unique<RwkvPrefillCell<Policy, bf16>>(cell, seed, allocator);
  return std::make_unique<RwkvPrefillCell<Policy, float>>(cell, seed, allocator);
}

}  // namespace arch_bench
