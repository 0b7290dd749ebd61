#pragma once
// A deliberately small mechanism for the plugin fixtures: its output is the current token's value
// row (attention to itself only), its reference the same row in fp64. `throw_in_check` makes its
// check() throw, as a broken plugin's would.
#include <memory>
#include <stdexcept>
#include <string>

#include "mechanisms/common/compare.hpp"
#include "mechanisms/common/inputs.hpp"
#include "runner/plugins/plugin_api.hpp"

namespace tiny {

using namespace arch_bench;

class TinyCell final : public PreparedCell {
 public:
  TinyCell(const Cell& cell, std::uint64_t seed, Allocator& allocator, bool throw_in_check)
      : inputs_(make_attention_inputs(cell, cell.sequence_length + 1, seed)),
        out_(allocator, static_cast<std::size_t>(inputs_.batch_heads * inputs_.dim)),
        throw_in_check_(throw_in_check) {}
  void run() override {
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      store(inputs_.v_at(bh, inputs_.tokens - 1), inputs_.dim, out_.data() + bh * inputs_.dim);
    }
  }
  Accuracy check() const override {
    if (throw_in_check_) throw std::runtime_error("tiny: the reference is broken on purpose");
    ErrorAccumulator errors;
    for (std::int64_t bh = 0; bh < inputs_.batch_heads; ++bh) {
      const MatrixD v = inputs_.head_matrix(inputs_.v, bh, inputs_.tokens);
      errors.add_row(out_.data() + bh * inputs_.dim, v.row(inputs_.tokens - 1), inputs_.dim);
    }
    return errors.finish();
  }
  std::vector<ByteSpan> buffers() const override { return {out_.byte_span()}; }

 private:
  AttentionInputs inputs_;
  Buffer<float> out_;
  bool throw_in_check_;
};

class TinyMechanism final : public Mechanism {
 public:
  TinyMechanism(std::string id, bool throw_in_check)
      : info_{std::move(id), "plugin test fixture", StateKind::fixed_state, {"cpu"}}, throw_in_check_(throw_in_check) {}
  const MechanismInfo& info() const override { return info_; }
  std::optional<std::string> unsupported(const Cell&) const override { return std::nullopt; }
  std::int64_t state_bytes(const Cell& cell) const override { return cell.batch_heads() * cell.head_dim * 4; }
  std::int64_t predicted_peak_bytes(const Cell& cell) const override { return state_bytes(cell); }
  Cost cost(const Cell& cell) const override { return {static_cast<double>(state_bytes(cell)), 0}; }
  std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed, Backend& backend) const override {
    return std::make_unique<TinyCell>(cell, seed, backend.allocator(), throw_in_check_);
  }

 private:
  MechanismInfo info_;
  bool throw_in_check_;
};

}  // namespace tiny
