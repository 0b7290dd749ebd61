// causal_mean (see causal_mean.hpp): the mechanism, its prepared CPU cells, and its registration.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/checked_size.hpp"
#include "core/options.hpp"
#include "mechanisms/causal_mean/causal_mean.hpp"
#include "mechanisms/common/check_rows.hpp"
#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/common/prepare_cell.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {

constexpr std::int64_t kPrefillRowsChecked = 64;  // per (batch, head)

// The mechanism's one option, declared here and nowhere else: the CLI flag (--mean-power), the
// report rows, diff pairing, shards, conformance and the schema all read this declaration.
const OptionSpec& power_option() {
  static const OptionSpec spec{.key = "mean_power",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{0},
                               .help = "causal_mean: the weights' power p, w_i = (i + 1)^p (0: the plain mean)",
                               .minimum = 0.0};
  return spec;
}
}  // namespace
std::int64_t causal_mean_power(const MechanismOptions& options) { return power_option().integer(options); }
namespace {
std::int64_t power_of(const Cell& cell) { return causal_mean_power(cell.options); }
// ---------------------------------------------------------------------------------------------------

// Decode: the state already holds the L context tokens; the step folds in token L and reads it out.
template <class T>
class DecodeCell final : public PreparedCell {
 public:
  DecodeCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : length_(cell.sequence_length),
        power_(power_of(cell)),
        inputs_(make_attention_inputs(cell, length_ + 1, seed)),
        s_(allocator, checked_mul(cell.batch_heads(), cell.head_dim)),
        s_next_(allocator, s_.size()),
        v_(allocator, s_.size()),
        out_(allocator, s_.size()) {
    const std::int64_t dim = inputs_.dim;
    std::fill(s_.data(), s_.data() + s_.size(), 0.0f);
    // The context, folded in token by token as decode steps would (in fp32, from storage values).
    std::vector<T> v_t(static_cast<std::size_t>(dim));
    for (std::int64_t t = 0; t < length_; ++t) {
      const float w = static_cast<float>(causal_mean_weight(t, power_));
      weight_ += w;
      for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
        store(inputs_.v_at(bh, t), dim, v_t.data());
        for (std::int64_t c = 0; c < dim; ++c) s_.data()[bh * dim + c] += w * to_float(v_t[c]);
      }
    }
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      store(inputs_.v_at(bh, length_), dim, v_.data() + bh * dim);
    }
  }

  void run() override {
    causal_mean_decode_step(inputs_.batch_heads, inputs_.dim, length_, power_, s_.data(), weight_, v_.data(),
                            s_next_.data(), &weight_next_, out_.data());
  }

  Accuracy check() const override {
    ErrorAccumulator errors;
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      const CausalMeanReference ref =
          causal_mean_reference(inputs_.head_matrix(inputs_.v, bh, length_ + 1), power_);
      errors.add_row(out_.data() + bh * inputs_.dim, ref.outputs.row(length_), inputs_.dim);
    }
    return errors.finish();
  }

  std::vector<ByteSpan> buffers() const override {
    return {s_.byte_span(), s_next_.byte_span(), v_.byte_span(), out_.byte_span()};
  }

 private:
  std::int64_t length_, power_;
  AttentionInputs inputs_;
  Buffer<float> s_, s_next_;
  Buffer<T> v_, out_;
  float weight_ = 0, weight_next_ = 0;
};

template <class T>
class PrefillCell final : public PreparedCell {
 public:
  PrefillCell(const Cell& cell, std::uint64_t seed, Allocator& allocator)
      : power_(power_of(cell)),
        inputs_(make_attention_inputs(cell, cell.sequence_length, seed)),
        v_(allocator, inputs_.v.size()),
        out_(allocator, inputs_.v.size()),
        s_(allocator, checked_mul(cell.batch_heads(), cell.head_dim)) {
    store(inputs_.v.data(), static_cast<std::int64_t>(inputs_.v.size()), v_.data());
  }

  void run() override {
    std::fill(s_.data(), s_.data() + s_.size(), 0.0f);
    causal_mean_prefill(inputs_.batch_heads, inputs_.tokens, inputs_.dim, power_, v_.data(), s_.data(), &weight_,
                        out_.data());
  }

  Accuracy check() const override {
    ErrorAccumulator errors;
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      const CausalMeanReference ref =
          causal_mean_reference(inputs_.head_matrix(inputs_.v, bh, inputs_.tokens), power_);
      for (std::int64_t t : rows_to_check(inputs_.tokens, kPrefillRowsChecked)) {
        errors.add_row(out_.data() + (bh * inputs_.tokens + t) * inputs_.dim, ref.outputs.row(t), inputs_.dim);
      }
    }
    return errors.finish();
  }

  std::vector<ByteSpan> buffers() const override { return {v_.byte_span(), out_.byte_span(), s_.byte_span()}; }

 private:
  std::int64_t power_;
  AttentionInputs inputs_;
  Buffer<T> v_, out_;
  Buffer<float> s_;
  float weight_ = 0;
};

class CausalMean final : public Mechanism {
 public:
  const MechanismInfo& info() const override {
    static const MechanismInfo info{"causal_mean", "causal (weighted) mean of the values: the new-mechanism template",
                                    StateKind::fixed_state, {"cpu"}};
    return info;
  }

  std::optional<std::string> unsupported(const Cell&) const override { return std::nullopt; }

  std::vector<OptionSpec> option_specs() const override { return {power_option()}; }

  // S [batch_heads, dim] in fp32 (and the weight sum, one float).
  std::int64_t state_bytes(const Cell& cell) const override {
    return checked_product(cell.batch_heads(), cell.head_dim, std::int64_t{4});
  }

  std::int64_t predicted_peak_bytes(const Cell& cell) const override {
    const std::int64_t e = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
    const std::int64_t bhd = checked_mul(cell.batch_heads(), cell.head_dim);
    if (cell.phase == Phase::prefill) return checked_add(checked_product(2, cell.sequence_length, bhd, e), state_bytes(cell));
    return checked_add(checked_mul(2, state_bytes(cell)), checked_product(2, bhd, e));
  }

  // Per token and channel: one multiply-add into S and one division (3 flops).
  Cost cost(const Cell& cell) const override {
    const double e = static_cast<double>(dtype_bytes(cell.dtype));
    const double bhd = static_cast<double>(cell.batch_heads()) * static_cast<double>(cell.head_dim);
    if (cell.phase == Phase::decode) return {bhd * (2 * 4 + 2 * e), 3 * bhd};
    const double length = static_cast<double>(cell.sequence_length);
    return {bhd * length * 2 * e, 3 * bhd * length};
  }

  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed, Backend& backend) const override {
    return prepare_cell<DecodeCell, PrefillCell>(cell, seed, backend.allocator());
  }

  const ConformanceAdapter* conformance() const override { return &causal_mean_conformance(); }
};

}  // namespace

std::unique_ptr<Mechanism> make_causal_mean() { return std::make_unique<CausalMean>(); }

// After the built-ins (rwkv7 is 90): `arch-bench list` and the landscape show it last.
ARCH_BENCH_REGISTER_MECHANISM(1000, make_causal_mean)

}  // namespace arch_bench
