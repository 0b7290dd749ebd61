#include "runner/measure/contention.hpp"

#include <algorithm>
#include <chrono>

namespace arch_bench {

namespace {

using float8 = float __attribute__((vector_size(32)));
constexpr int kSteps = 1024;

// The multiplier and addend come through volatile loads so the chains cannot be folded away; the
// results go to a per-thread sink (team_contention_ratio runs the probe on every thread at once, and
// a shared one would be a data race).
volatile float g_multiplier = 0.999999f, g_addend = 1e-7f;
thread_local volatile float t_sink = 0.0f;

__attribute__((noinline)) float dependent_chain(float m, float c) {
  float x = 1.0f;
  for (int i = 0; i < kSteps; ++i) x = x * m + c;
  return x;
}

__attribute__((noinline)) float independent_chains(float m, float c) {
  float8 a[8];
  for (int j = 0; j < 8; ++j) a[j] = float8{} + static_cast<float>(j);
  for (int i = 0; i < kSteps; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) a[j] = a[j] * m + c;
  }
  float8 sum = a[0];
  for (int j = 1; j < 8; ++j) sum += a[j];
  return sum[0] + sum[7];
}

template <class F>
double seconds(F&& f, float& sink) {
  const auto start = std::chrono::steady_clock::now();
  sink += f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double team_contention_ratio() {
  double largest = 0.0;
#pragma omp parallel reduction(max : largest)
  largest = std::max(largest, host_contention_ratio());
  return largest;
}

double host_contention_ratio() {
  const float m = g_multiplier, c = g_addend;
  float sink = 0.0f;
  const double latency = seconds([&] { return dependent_chain(m, c); }, sink);
  const double throughput = seconds([&] { return independent_chains(m, c); }, sink);
  t_sink = sink;  // keeps both results live
  return latency > 0.0 ? throughput / latency : 1.0;
}

}  // namespace arch_bench
