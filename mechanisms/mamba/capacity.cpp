#include "mechanisms/mamba/capacity.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace arch_bench {

namespace {

// Neutral selection: dt = 1, no decay (exp(dt A) = 1, the A -> 0 limit), D = 0, no gate. Writing
// token i with B_i = k_i and u_i = v_i gives h[c] = sum_i k_i v_i[c]; reading with C = k_j gives
// y_j[c] = sum_i (k_j.k_i) v_i[c]: an unnormalised additive memory addressed by N-wide keys, exact for
// orthogonal keys up to n = N (the state size) and a growing blur beyond.
class MambaCapacity final : public CapacityProbe {
 public:
  explicit MambaCapacity(std::int64_t state_size) : state_size_(state_size) {}
  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override {
    const std::int64_t n = keys.rows, width = keys.cols, channels = values.cols;
    MatrixD h(channels, width);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t s = 0; s < width; ++s) h(c, s) += keys(i, s) * values(i, c);
      }
    }
    MatrixD out(n, channels);
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t s = 0; s < width; ++s) out(j, c) += keys(j, s) * h(c, s);
      }
    }
    return out;
  }
  std::string setting() const override {
    return "B = k (write), C = k (read), dt = 1, no decay (A -> 0), D = 0, no gate; keys of width N = " +
           std::to_string(state_size_);
  }
  std::int64_t key_dim(std::int64_t) const override { return state_size_; }

 private:
  std::int64_t state_size_;
};

}  // namespace

const CapacityProbe& mamba_capacity(std::int64_t state_size) {
  // One probe per state size asked for; they live as long as the program.
  static std::mutex mutex;
  static std::map<std::int64_t, std::unique_ptr<MambaCapacity>> probes;
  const std::lock_guard lock(mutex);
  auto& probe = probes[state_size];
  if (!probe) probe = std::make_unique<MambaCapacity>(state_size);
  return *probe;
}

}  // namespace arch_bench
