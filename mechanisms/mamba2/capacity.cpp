#include "mechanisms/mamba2/capacity.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace arch_bench {

namespace {

// Neutral setting: dt = 1, no decay (a_t = 1, the A -> 0 limit), D = 0, no gate. Writing token i
// with B_i = k_i and x_i = v_i gives H = sum_i v_i k_i^T; reading with C = k_j gives
// y_j = sum_i (k_i . k_j) v_i: an additive memory addressed by N-wide keys, exact for orthogonal
// keys up to n = N and blurred beyond. A head's own decay only forgets more, by age.
class Mamba2Capacity final : public CapacityProbe {
 public:
  explicit Mamba2Capacity(std::int64_t state_size) : state_size_(state_size) {}
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    const std::int64_t n = keys.rows, width = keys.cols, channels = values.cols;
    MatrixD h(channels, width);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t s = 0; s < width; ++s) h(c, s) += values(i, c) * keys(i, s);
      }
    }
    MatrixD out(n, channels);
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t s = 0; s < width; ++s) out(j, c) += h(c, s) * keys(j, s);
      }
    }
    return out;
  }
  std::string setting() const override {
    return "B = k (write), C = k (read), x = v, dt = 1, no decay (A -> 0), D = 0, no gate; keys of width N = " +
           std::to_string(state_size_);
  }
  std::int64_t key_dim(std::int64_t) const override { return state_size_; }

 private:
  std::int64_t state_size_;
};

}  // namespace

const CapacityProbe& mamba2_capacity(std::int64_t state_size) {
  // One probe per state size asked for; they live as long as the program.
  static std::mutex mutex;
  static std::map<std::int64_t, std::unique_ptr<Mamba2Capacity>> probes;
  const std::lock_guard lock(mutex);
  auto& probe = probes[state_size];
  if (!probe) probe = std::make_unique<Mamba2Capacity>(state_size);
  return *probe;
}

}  // namespace arch_bench
