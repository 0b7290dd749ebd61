#include "mechanisms/common/normal_draws.hpp"

#include "core/bf16.hpp"
#include "core/stop_request.hpp"

namespace arch_bench {

void fill_normal(std::vector<float>& out, std::size_t count, std::mt19937_64& rng, DType dtype, float scale) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Reserved, not resized: zero-filling gigabytes first would take seconds no stop can cut short.
  out.clear();
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    // Gigabytes of draws take tens of seconds: a SIGTERM must not wait for them (core/stop_request.hpp).
    if (i % kStopPollElements == 0) throw_if_stop_requested("drawing the cell's inputs");
    const float value = scale * normal(rng);
    out.push_back(dtype == DType::bfloat16 ? round_through<bf16>(value) : value);
  }
}

}  // namespace arch_bench
