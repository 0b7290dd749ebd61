// window_softmax: sliding-window causal softmax attention as an out-of-tree arch-bench mechanism.
// Each token attends to the last W = 128 tokens (itself included), so the decode state is a ring
// buffer of W keys and W values per head: fixed in L, unlike softmax_kv's growing cache.
//   decode:  write token L into slot L mod W, attend over the min(L + 1, W) tokens in the ring
//   prefill: every row t over tokens [max(0, t - W + 1), t]
// Both are checked against reference.hpp's fp64 rows on the same seeded inputs the built-ins draw.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "mechanisms/common/check_rows.hpp"
#include "core/checked_size.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "reference.hpp"
#include "runner/plugins/plugin_api.hpp"

#ifndef WINDOW_SOFTMAX_VERSION
#define WINDOW_SOFTMAX_VERSION "dev"
#endif

namespace window_softmax {

using namespace arch_bench;

constexpr std::int64_t kWindow = 128;
constexpr std::int64_t kPrefillRowsChecked = 64;  // per head

// Per-thread scratch of attend(): W scores, then the dim fp32 accumulators.
inline std::int64_t scratch_floats(std::int64_t dim) { return kWindow + dim; }

// One output row over `count` <= W keys/values, key(j) / value(j) giving row j of the window, oldest
// first: the scores first (and their max), then exp-weighted values, in fp32. Two passes over the
// window instead of an online softmax: the window is short, and no rescaling in the inner loop.
template <class T, class KeyAt, class ValueAt>
void attend(const T* q, std::int64_t count, std::int64_t dim, KeyAt key, ValueAt value, float* scratch, T* out) {
  float* scores = scratch;
  float* acc = scratch + kWindow;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  float max_score = -INFINITY;
  for (std::int64_t j = 0; j < count; ++j) {
    const T* k = key(j);
    float dot = 0;
    for (std::int64_t c = 0; c < dim; ++c) dot += to_float(q[c]) * to_float(k[c]);
    scores[j] = dot * scale;
    max_score = std::max(max_score, scores[j]);
  }
  std::fill(acc, acc + dim, 0.0f);
  float sum = 0;
  for (std::int64_t j = 0; j < count; ++j) {
    const float weight = std::exp(scores[j] - max_score);
    sum += weight;
    const T* v = value(j);
    for (std::int64_t c = 0; c < dim; ++c) acc[c] += weight * to_float(v[c]);
  }
  for (std::int64_t c = 0; c < dim; ++c) out[c] = from_float<T>(acc[c] / sum);
}

template <class T>
class DecodeCell final : public PreparedCell {
 public:
  DecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : length_(cell.sequence_length),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        k_ring_(allocator, checked_product(cell.batch_heads(), kWindow, cell.head_dim)),
        v_ring_(allocator, k_ring_.size()),
        q_(allocator, checked_mul(cell.batch_heads(), cell.head_dim)),
        k_new_(allocator, q_.size()),
        v_new_(allocator, q_.size()),
        out_(allocator, q_.size()),
        scratch_(allocator, checked_mul(static_cast<std::int64_t>(omp_get_max_threads()), scratch_floats(cell.head_dim))) {
    const std::int64_t dim = inputs_.dim;
    // The context's last W tokens, each in its ring slot (t mod W).
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      for (std::int64_t t = std::max<std::int64_t>(0, length_ - kWindow); t < length_; ++t) {
        const std::int64_t slot = (bh * kWindow + t % kWindow) * dim;
        store(inputs_.k_at(bh, t), dim, k_ring_.data() + slot);
        store(inputs_.v_at(bh, t), dim, v_ring_.data() + slot);
      }
    }
    store_token(inputs_, length_, q_.data(), k_new_.data(), v_new_.data());
  }

  // Token L replaces token L - W in its slot; re-running the step rewrites the same slot, so every
  // sample does identical work.
  void run() override {
    const std::int64_t dim = inputs_.dim, count = std::min(length_ + 1, kWindow);
    const std::int64_t first = length_ + 1 - count;
#pragma omp parallel for schedule(static)
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      T* k_ring = k_ring_.data() + bh * kWindow * dim;
      T* v_ring = v_ring_.data() + bh * kWindow * dim;
      std::copy_n(k_new_.data() + bh * dim, dim, k_ring + (length_ % kWindow) * dim);
      std::copy_n(v_new_.data() + bh * dim, dim, v_ring + (length_ % kWindow) * dim);
      auto key = [&](std::int64_t j) -> const T* { return k_ring + ((first + j) % kWindow) * dim; };
      auto value = [&](std::int64_t j) -> const T* { return v_ring + ((first + j) % kWindow) * dim; };
      attend(q_.data() + bh * dim, count, dim, key, value, scratch_.data() + omp_get_thread_num() * scratch_floats(dim),
             out_.data() + bh * dim);
    }
  }

  Accuracy check() const override {
    ErrorAccumulator errors;
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      const MatrixD q = inputs_.head_matrix(inputs_.q, bh, length_ + 1);
      const MatrixD k = inputs_.head_matrix(inputs_.k, bh, length_ + 1);
      const MatrixD v = inputs_.head_matrix(inputs_.v, bh, length_ + 1);
      const std::vector<double> ref = reference_row(q, k, v, length_, kWindow);
      errors.add_row(out_.data() + bh * inputs_.dim, ref.data(), inputs_.dim);
    }
    return errors.finish();
  }

  std::vector<ByteSpan> buffers() const override {
    return {k_ring_.byte_span(), v_ring_.byte_span(), q_.byte_span(), k_new_.byte_span(), v_new_.byte_span(),
            out_.byte_span()};
  }

 private:
  std::int64_t length_;
  AttentionInputs inputs_;
  Buffer<T> k_ring_, v_ring_, q_, k_new_, v_new_, out_;
  Buffer<float> scratch_;
};

template <class T>
class PrefillCell final : public PreparedCell {
 public:
  PrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        q_(allocator, inputs_.q.size()),
        k_(allocator, inputs_.k.size()),
        v_(allocator, inputs_.v.size()),
        out_(allocator, inputs_.q.size()),
        scratch_(allocator, checked_mul(static_cast<std::int64_t>(omp_get_max_threads()), scratch_floats(cell.head_dim))) {
    store(inputs_.q.data(), inputs_.q.size(), q_.data());
    store(inputs_.k.data(), inputs_.k.size(), k_.data());
    store(inputs_.v.data(), inputs_.v.size(), v_.data());
  }

  void run() override {
    const std::int64_t dim = inputs_.dim, tokens = inputs_.tokens;
#pragma omp parallel for schedule(static)
    for (std::int64_t row = 0; row < inputs_.batch_heads * tokens; ++row) {
      const std::int64_t bh = row / tokens, t = row % tokens;
      const std::int64_t first = std::max<std::int64_t>(0, t - kWindow + 1);
      const T* k = k_.data() + (bh * tokens + first) * dim;
      const T* v = v_.data() + (bh * tokens + first) * dim;
      auto key = [&](std::int64_t j) -> const T* { return k + j * dim; };
      auto value = [&](std::int64_t j) -> const T* { return v + j * dim; };
      attend(q_.data() + row * dim, t - first + 1, dim, key, value, scratch_.data() + omp_get_thread_num() * scratch_floats(dim),
             out_.data() + row * dim);
    }
  }

  Accuracy check() const override {
    ErrorAccumulator errors;
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      const MatrixD q = inputs_.head_matrix(inputs_.q, bh, inputs_.tokens);
      const MatrixD k = inputs_.head_matrix(inputs_.k, bh, inputs_.tokens);
      const MatrixD v = inputs_.head_matrix(inputs_.v, bh, inputs_.tokens);
      for (std::int64_t t : rows_to_check(inputs_.tokens, kPrefillRowsChecked)) {
        const std::vector<double> ref = reference_row(q, k, v, t, kWindow);
        errors.add_row(out_.data() + (bh * inputs_.tokens + t) * inputs_.dim, ref.data(), inputs_.dim);
      }
    }
    return errors.finish();
  }

  std::vector<ByteSpan> buffers() const override {
    return {q_.byte_span(), k_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  AttentionInputs inputs_;
  Buffer<T> q_, k_, v_, out_;
  Buffer<float> scratch_;
};

class WindowSoftmax final : public Mechanism {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{"window_softmax", "sliding-window softmax attention, W=128 (plugin example)",
                                    StateKind::fixed_state, {"cpu"}};
    return info;
  }

  std::optional<std::string> unsupported(const Cell&) const override { return std::nullopt; }

  // The ring of W keys and values, whatever L is (a context shorter than W leaves slots unused).
  std::int64_t state_bytes(const Cell& cell) const override {
    return checked_product(2, kWindow, cell.batch_heads(), cell.head_dim,
                           static_cast<std::int64_t>(dtype_bytes(cell.dtype)));
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    const std::int64_t bhd = checked_mul(cell.batch_heads(), cell.head_dim);
    const std::int64_t scratch = checked_product(4, omp_get_max_threads(), scratch_floats(cell.head_dim));
    if (cell.phase == Phase::prefill) return checked_add(checked_product(4, cell.sequence_length, bhd, e), scratch);
    return checked_sum(state_bytes(cell), checked_product(4, bhd, e), scratch);
  }

  Cost cost(const Cell& cell) const override {
    const double e = static_cast<double>(dtype_bytes(cell.dtype));
    const double bh = static_cast<double>(cell.batch_heads());
    const double d = static_cast<double>(cell.head_dim);
    const double length = static_cast<double>(cell.sequence_length);
    const double w = static_cast<double>(kWindow);
    if (cell.phase == Phase::decode) {
      const double keys = std::min(length + 1, w);
      return {bh * d * e * (2 * keys + 4), bh * keys * 4 * d};
    }
    // Row t attends over min(t + 1, W) keys: QK and PV, 2 flops per multiply-add each.
    const double full = std::max(0.0, length - w);
    const double ramp = std::min(length, w);
    const double pairs = ramp * (ramp + 1) / 2 + full * w;
    return {bh * d * e * 4 * length, bh * 4 * d * pairs};
  }

  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed, Backend& backend) const override {
    return prepare_cell<DecodeCell, PrefillCell>(cell, seed, backend.allocator());
  }
};

int register_mechanisms(PluginRegistrar* registrar) {
  registrar->add(std::make_unique<WindowSoftmax>());
  return 0;
}

}  // namespace window_softmax

ARCH_BENCH_PLUGIN("window-softmax", WINDOW_SOFTMAX_VERSION, window_softmax::register_mechanisms)
