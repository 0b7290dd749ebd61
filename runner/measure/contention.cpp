#include "runner/measure/contention.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace arch_bench {

namespace {

using float8 = float __attribute__((vector_size(32)));
constexpr int kSteps = 1024;

// The multiplier and addend come through volatile loads so the chains cannot be folded away; the
// results go to a per-thread sink (team_contention_ratio runs the probe on every thread at once, and
// a shared one would be a data race).
volatile float g_multiplier = 0.999999f, g_addend = 1e-7f;
thread_local volatile float t_sink = 0.0f;

// What the independent chains add at each step: 4 KiB per thread, 16 steps of 8 vectors, so it stays
// in L1 and evicts almost nothing of a hot cell's working set.
constexpr int kFedSteps = 16;
constexpr int kFloatsPerStep = 8 * 8;  // 8 chains x 8 lanes
alignas(64) thread_local float t_addends[kFedSteps * kFloatsPerStep];

__attribute__((noinline)) float dependent_chain(float m, float c) {
  float x = 1.0f;
  for (int i = 0; i < kSteps; ++i) x = x * m + c;
  return x;
}

// Eight chains, each FMA fed by a vector load from L1: bound by FMA issue and by load issue, whichever
// is narrower (on Zen 1, with 128-bit units, both take a cycle per 8-lane vector). A core shared with
// a sibling that only loads slows this probe but not register-only chains: on the Zen 1 VM, among
// samples where register-only chains read 1.5-1.7 (no contention), they did not track a 64x64x64
// chunk_matmul at all (correlation -0.08 over 81 samples), while these did (0.63): the matmul took
// 14.3 us where they read under 1.75 and 22.3 us where they read 2.0 or more.
__attribute__((noinline)) float independent_chains(float m, const float* addends) {
  float8 a[8];
  for (int j = 0; j < 8; ++j) a[j] = float8{} + static_cast<float>(j);
  for (int i = 0; i < kSteps; ++i) {
    const float* step = addends + (i % kFedSteps) * kFloatsPerStep;
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      float8 addend;
      std::memcpy(&addend, step + 8 * j, sizeof(addend));
      a[j] = a[j] * m + addend;
    }
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
  float* addends = t_addends;
  std::fill_n(addends, kFedSteps * kFloatsPerStep, c);  // also brings the buffer into L1 before it is timed
  float sink = 0.0f;
  const double latency = seconds([&] { return dependent_chain(m, c); }, sink);
  const double throughput = seconds([&] { return independent_chains(m, addends); }, sink);
  t_sink = sink;  // keeps both results live
  return latency > 0.0 ? throughput / latency : 1.0;
}

}  // namespace arch_bench
