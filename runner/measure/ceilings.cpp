#include "runner/measure/ceilings.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/backends/cpu/host_facts.hpp"
#include "core/stop_request.hpp"

namespace arch_bench {

namespace {

// One register's worth of fp32 lanes at the width -march=native gives the hot path.
#if defined(__AVX512F__)
constexpr std::size_t kLanes = 16;
#else
constexpr std::size_t kLanes = 8;  // AVX2; narrower targets split it into two registers
#endif
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));

// Independent accumulators: one add/FMA chain is latency-bound (3-4 cycles) while the core can
// issue two per cycle, so a single chain would measure latency instead of throughput. The read's
// accumulators are its streams (kReadStreams, below), each taking kReadChains vectors per granule.
constexpr int kReadChains = 4;
constexpr int kFmaChains = 12;  // >= FMA latency x FMA ports (4 x 2 on Zen 3 / Skylake)
constexpr std::size_t kGranule = kReadChains * kLanes;  // floats per read-loop iteration

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
// Floors for when the LLC is small or unknown: far beyond any per-core cache, while a pass stays
// tens of milliseconds.
constexpr std::int64_t kReadFloorBytes = 256 * kMiB;
constexpr std::int64_t kTriadArrayFloorBytes = 128 * kMiB;
// Past this, arrays grow only with an LLC larger than it (see stream_array_bytes).
constexpr std::int64_t kStreamArrayCapBytes = 512 * kMiB;
constexpr int kBandwidthPasses = 5;
constexpr int kFmaPasses = 3;
constexpr std::int64_t kFmaIterations = std::int64_t{1} << 23;  // ~15-30 ms per pass per thread

// Results land here so the compiler must compute them.
volatile float g_sink = 0;
// Read through a volatile so the FMA operands are not compile-time constants.
volatile float g_fma_multiplier = 0.999999f;
volatile float g_fma_addend = 1e-6f;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using FloatArray = std::unique_ptr<float[], FreeDeleter>;

// Plain 4 KiB pages on purpose: MADV_HUGEPAGE made the first touch stall in kernel compaction
// for over a second on a fragmented host, while the streaming rate was the same either way.
FloatArray allocate_stream(std::size_t floats) {
  constexpr std::size_t kAlignment = 4096;
  const std::size_t bytes = (floats * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  auto* data = static_cast<float*>(std::aligned_alloc(kAlignment, bytes));
  if (data == nullptr) throw std::bad_alloc();
  return FloatArray(data);
}

// The calling OpenMP thread's contiguous share of [0, floats), in whole granules. Every pass and
// the first touch use the same split, so each thread streams pages it placed (NUMA first touch).
struct Slice {
  std::size_t begin, end;
};
Slice thread_slice(std::size_t floats) {
  const auto thread = static_cast<std::size_t>(omp_get_thread_num());
  const auto team = static_cast<std::size_t>(omp_get_num_threads());
  const std::size_t granules = floats / kGranule;
  return {granules * thread / team * kGranule, granules * (thread + 1) / team * kGranule};
}

Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float horizontal_sum(Vec v) {
  float sum = 0;
  for (std::size_t lane = 0; lane < kLanes; ++lane) sum += v[lane];
  return sum;
}

// The slice is read as kReadStreams equal parts walked in lockstep, not front to back: one
// sequential stream per core is held back by the misses that core keeps in flight, not by the
// memory. On the 2-vCPU Zen 4 VM one stream read 29-31 GB/s against 34-36 for four (2 threads, six
// rounds alternated; one thread 21 against 25-27; eight streams or prefetches into L2 added nothing),
// and a prefetching decode step had read 121-158% of the one-stream ceiling. A decode step reads K
// and V of several heads at once, so it is a few streams per core too.
constexpr int kReadStreams = 4;

}  // namespace

std::size_t read_granule_floats() { return kGranule; }

std::int64_t stream_array_bytes(std::int64_t llc_bytes, std::int64_t memory_bytes) {
  // 4x the LLC per array (12x over the three) where that stays within kStreamArrayCapBytes; a
  // larger LLC gets arrays of one LLC each. A 2-vCPU guest on a host with a 480 MiB L3 had 1.9 GB
  // arrays, 14 s a reading, for no surer a number: 3 x LLC of sweep already leaves no LRU-like
  // cache a line to reuse, and even a policy that shields old lines perfectly at most a third.
  const std::int64_t llc = std::max<std::int64_t>(llc_bytes, 0);
  std::int64_t bytes = std::max({std::min(4 * llc, std::max(kStreamArrayCapBytes, llc)),
                                 kTriadArrayFloorBytes, (kReadFloorBytes + 2) / 3});
  // The three arrays take at most a quarter of the memory, never less than the floor.
  if (memory_bytes > 0) bytes = std::min(bytes, std::max(memory_bytes / 12, kTriadArrayFloorBytes));
  return bytes;
}

float streaming_read_sum(const float* data, std::size_t begin, std::size_t end) {
  Vec acc[kReadStreams] = {};
  const std::size_t part = (end - begin) / kGranule / kReadStreams * kGranule;
  for (std::size_t i = 0; i < part; i += kGranule) {
    for (int stream = 0; stream < kReadStreams; ++stream) {
      const float* p = data + begin + stream * part + i;
      for (int chain = 0; chain < kReadChains; ++chain) acc[stream] += load(p + chain * kLanes);
    }
  }
  // The granules that did not divide into the streams.
  for (std::size_t i = begin + kReadStreams * part; i < end; i += kGranule) {
    for (int chain = 0; chain < kReadChains; ++chain) acc[0] += load(data + i + chain * kLanes);
  }
  Vec total = {};
  for (const Vec& a : acc) total += a;
  return horizontal_sum(total);
}

namespace {

// Three arrays (a, b, c) sized by stream_array_bytes(), so that no pass is served from cache.
struct StreamArrays {
  std::size_t floats;
  FloatArray a, b, c;
};

StreamArrays make_stream_arrays(int threads) {
  const std::int64_t array_bytes = stream_array_bytes(last_level_cache_bytes(), host_memory_bytes());
  const std::size_t floats =
      static_cast<std::size_t>(array_bytes) / sizeof(float) / kGranule * kGranule;
  StreamArrays arrays{floats, allocate_stream(floats), allocate_stream(floats),
                      allocate_stream(floats)};
#pragma omp parallel num_threads(threads)
  {
    const Slice slice = thread_slice(floats);
    for (std::size_t i = slice.begin; i < slice.end; ++i) {
      arrays.a[i] = 0.0f;
      arrays.b[i] = 1.0f;
      arrays.c[i] = 2.0f;
    }
  }
  return arrays;
}

// A stop request (SIGINT/SIGTERM) ends every probe after its first pass: one pass keeps the reading
// valid (only less sure), and the run then stops before its first cell (issue 42).
bool stop_after_pass(int pass, int& passes_done) {
  passes_done = pass + 1;
  return stop_requested();
}

double read_gbps(const StreamArrays& arrays, int threads, int& passes_done) {
  double best_seconds = 1e300;
  float sum = 0;
  for (int pass = 0; pass < kBandwidthPasses; ++pass) {
    const auto start = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      const Slice slice = thread_slice(arrays.floats);
      sum += streaming_read_sum(arrays.a.get(), slice.begin, slice.end) +
             streaming_read_sum(arrays.b.get(), slice.begin, slice.end) +
             streaming_read_sum(arrays.c.get(), slice.begin, slice.end);
    }
    best_seconds = std::min(best_seconds, seconds_since(start));
    if (stop_after_pass(pass, passes_done)) break;
  }
  g_sink = g_sink + sum;
  const double bytes = 3.0 * static_cast<double>(arrays.floats) * sizeof(float);
  return bytes / best_seconds / 1e9;
}

double triad_gbps(StreamArrays& arrays, int threads, int& passes_done) {
  const float scalar = g_fma_multiplier;
  double best_seconds = 1e300;
  for (int pass = 0; pass < kBandwidthPasses; ++pass) {
    float* a = arrays.a.get();
    const float* b = arrays.b.get();
    const float* c = arrays.c.get();
    const auto start = Clock::now();
#pragma omp parallel num_threads(threads)
    {
      const Slice slice = thread_slice(arrays.floats);
#pragma omp simd
      for (std::size_t i = slice.begin; i < slice.end; ++i) a[i] = b[i] + scalar * c[i];
    }
    best_seconds = std::min(best_seconds, seconds_since(start));
    if (stop_after_pass(pass, passes_done)) break;
  }
  // Reading the output back keeps the stores from being dead before free().
  g_sink = g_sink + arrays.a[0] + arrays.a[arrays.floats - 1];
  // STREAM's convention: 3 arrays counted, not the write-allocate read of `a` the cache also does.
  // A mechanism's bytes_moved likewise counts only what the kernel must move, so they compare.
  const double bytes = 3.0 * static_cast<double>(arrays.floats) * sizeof(float);
  return bytes / best_seconds / 1e9;
}

// acc = acc * m + a compiles to one FMA per vector on FMA targets (and mul + add elsewhere): two
// flops per lane either way. m < 1 keeps every chain bounded, so no inf or denormal slows it.
float fma_chains(std::int64_t iterations) {
  const Vec multiplier = Vec{} + static_cast<float>(g_fma_multiplier);
  const Vec addend = Vec{} + static_cast<float>(g_fma_addend);
  Vec acc[kFmaChains];
  for (int chain = 0; chain < kFmaChains; ++chain) acc[chain] = Vec{} + 0.01f * chain;
  for (std::int64_t i = 0; i < iterations; ++i) {
    for (int chain = 0; chain < kFmaChains; ++chain) acc[chain] = acc[chain] * multiplier + addend;
  }
  Vec total = {};
  for (const Vec& a : acc) total += a;
  return horizontal_sum(total);
}

double fma_gflops(int threads, int& passes_done) {
  double best_seconds = 1e300;
  float sum = 0;
  // Flops are counted for the team OpenMP actually formed: OMP_THREAD_LIMIT or a nested region
  // can grant fewer threads than asked, and counting `threads` would then overstate the peak.
  int team = threads;
  for (int pass = 0; pass < kFmaPasses; ++pass) {
    const auto start = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      if (omp_get_thread_num() == 0) team = omp_get_num_threads();
      sum += fma_chains(kFmaIterations);
    }
    best_seconds = std::min(best_seconds, seconds_since(start));
    if (stop_after_pass(pass, passes_done)) break;
  }
  g_sink = g_sink + sum;
  const double flops =
      2.0 * static_cast<double>(kLanes) * kFmaChains * static_cast<double>(kFmaIterations) * team;
  return flops / best_seconds / 1e9;
}

}  // namespace

Ceilings measure_ceilings(int threads) {
  if (threads < 1) {
    throw std::invalid_argument("ceilings need threads >= 1 (got " + std::to_string(threads) + ")");
  }
  Ceilings ceilings;
  ceilings.threads = threads;
  int fma_passes = 0, read_passes = 0, triad_passes = 0;
  ceilings.peak_gflops = fma_gflops(threads, fma_passes);
  {
    StreamArrays arrays = make_stream_arrays(threads);
    ceilings.memory_read_gbps = read_gbps(arrays, threads, read_passes);
    ceilings.memory_triad_gbps = triad_gbps(arrays, threads, triad_passes);
    ceilings.method = fmt::format(
        "{} OpenMP threads; read: fp32 streaming sum over 3 x {} MiB, {} streams per thread, best of {}; triad: STREAM "
        "a=b+s*c over the same arrays (3 counted), best of {}; peak: {} independent {}-lane fp32 "
        "FMA chains per thread, best of {}",
        threads, static_cast<std::int64_t>(arrays.floats * sizeof(float)) / kMiB, kReadStreams,
        read_passes, triad_passes, kFmaChains, kLanes, fma_passes);
    if (read_passes < kBandwidthPasses || triad_passes < kBandwidthPasses || fma_passes < kFmaPasses) {
      ceilings.method += "; cut short by a stop request";
    }
  }
  return ceilings;
}

bool wants_second_ceiling_reading(bool gpu, bool interrupted, double cells_seconds) {
  return !gpu && !interrupted && cells_seconds >= kSecondCeilingReadingAfterSeconds;
}

Ceilings with_second_reading(Ceilings before, const Ceilings& after) {
  auto reading = [](const char* when, const Ceilings& c) {
    return CeilingReading{when, c.memory_read_gbps, c.memory_triad_gbps, c.peak_gflops};
  };
  before.readings = {reading("before_cells", before), reading("after_cells", after)};
  before.memory_read_gbps = std::max(before.memory_read_gbps, after.memory_read_gbps);
  before.memory_triad_gbps = std::max(before.memory_triad_gbps, after.memory_triad_gbps);
  before.peak_gflops = std::max(before.peak_gflops, after.peak_gflops);
  before.method += "; each ceiling the best of a reading before the cells and one after them";
  return before;
}

}  // namespace arch_bench
