#pragma once
// What the three RWKV generations' GPU tests (test_rwkv_gpu.cpp) check, each on its own
// mechanism: the registered CUDA cells against the fp64 reference (decode and prefill, fp32 and
// bf16, L around the token tile and not a multiple of it), head widths the thread map pads, and
// the scan kernels against each other: a decode at position L equals row L of a prefill over L + 1
// tokens with the same state after, and a prefill continues from the state it is given. Also what
// the chunked prefills' tests (test_rwkv6_chunk_gpu.cpp, test_rwkv7_chunk_gpu.cpp) share with them:
// a token range's rows uploaded, and the decay regimes a chunked prefill must survive.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/cuda_cell_checks.hpp"
#include "mechanisms/registry.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#include "core/bf16.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/rwkv/cuda.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#endif

namespace arch_bench::testing {

inline void expect_rwkv_cell_matches_reference(const std::string& id, Backend& backend, Phase phase, DType dtype,
                                               std::int64_t dim, std::int64_t length) {
  Cell cell = small_cell(4, dim, length, dtype, phase);
  cell.mechanism = id;
  const std::string where = id + " " + phase_name(phase) + " " + dtype_name(dtype) + " d=" + std::to_string(dim) +
                            " L=" + std::to_string(length);
  expect_cuda_cell_matches_fp64_reference(backend, cell, phase == Phase::decode ? 4 : 4 * length, 11, where);
}

// The decays a chunked prefill must survive, set on `in`'s decay input in turn and each checked by
// check(in, name): "strong" (bf16-rounded draws from `strong`), "weak" (all -12) and "mixed"
// (bf16-rounded draws from `mixed`), the draws from one generator seeded 5.
template <class Check>
void for_each_decay_regime(RwkvInputs& in, std::pair<float, float> strong, std::pair<float, float> mixed,
                           Check check) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> strong_draw(strong.first, strong.second);
  std::uniform_real_distribution<float> mixed_draw(mixed.first, mixed.second);
  for (float& d : in.sequence[kRwkvDecay]) d = round_through<bf16>(strong_draw(rng));
  check(in, "strong");
  for (float& d : in.sequence[kRwkvDecay]) d = -12.0f;
  check(in, "weak");
  for (float& d : in.sequence[kRwkvDecay]) d = round_through<bf16>(mixed_draw(rng));
  check(in, "mixed");
}

#if ARCH_BENCH_HAVE_CUDA

// Tokens [first, first + count) of every head of one of `in`'s inputs on the device, [bh][count][dim].
template <class T>
Buffer<T> upload_rwkv_rows(CudaBackend& cuda, const RwkvInputs& in, RwkvInput input, std::int64_t first,
                           std::int64_t count) {
  std::vector<float> rows;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const float* begin = in.at(input, bh, first);
    rows.insert(rows.end(), begin, begin + count * in.dim);
  }
  Buffer<T> buffer(cuda.allocator(), rows.size());
  upload<T>(cuda, rows.data(), static_cast<std::int64_t>(rows.size()), buffer.data());
  return buffer;
}

// A device state and parameters of `in`'s generation, fresh.
struct RwkvDeviceState {
  RwkvDeviceState(CudaBackend& cuda, const RwkvInputs& in)
      : state(cuda.allocator(), static_cast<std::size_t>(in.version == RwkvVersion::v4 ? in.batch_heads * 3 * in.dim
                                                                                        : in.batch_heads * in.dim * in.dim)) {
    const RwkvScanPlan plan = plan_rwkv_scan(in.version, in.batch_heads, in.heads, 1, in.dim);
    if (in.version == RwkvVersion::v4) {
      launch_rwkv4_reset(plan, state.data(), cuda.stream());
    } else {
      zero_async(cuda, state.data(), state.bytes());
    }
    if (!in.w.empty()) {
      w = Buffer<float>(cuda.allocator(), in.w.size());
      upload<float>(cuda, in.w.data(), static_cast<std::int64_t>(in.w.size()), w.data());
    }
    if (!in.u.empty() && in.version != RwkvVersion::v7) {
      u = Buffer<float>(cuda.allocator(), in.u.size());
      upload<float>(cuda, in.u.data(), static_cast<std::int64_t>(in.u.size()), u.data());
    }
  }
  std::vector<float> values(CudaBackend& cuda) const {
    cuda.synchronize();
    return download<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()));
  }
  Buffer<float> state, w, u;
};

// The scan over tokens [first, first + count) of every head, continuing from `carried`; returns
// out [bh, count, dim]. `multiprocessors` as plan_rwkv_scan takes it (0: 128-thread blocks; a large
// count forces the one-warp blocks a small grid gets).
template <class T>
std::vector<float> rwkv_scan(CudaBackend& cuda, const RwkvInputs& in, std::int64_t first, std::int64_t count,
                             RwkvDeviceState& carried, int multiprocessors = 0) {
  const std::int64_t elements = in.batch_heads * count * in.dim;
  const auto used = rwkv_inputs_used(in.version);
  std::array<Buffer<T>, kRwkvInputCount> buffers;
  for (int i = 0; i < kRwkvInputCount; ++i) {
    if (used[i]) buffers[i] = upload_rwkv_rows<T>(cuda, in, static_cast<RwkvInput>(i), first, count);
  }
  Buffer<T> out(cuda.allocator(), static_cast<std::size_t>(elements));
  poison(cuda, out.data(), out.bytes());
  const RwkvTokens<T> x{buffers[kRwkvR].data(),     buffers[kRwkvK].data(),     buffers[kRwkvV].data(),
                        buffers[kRwkvDecay].data(), buffers[kRwkvKappa].data(), buffers[kRwkvIclr].data()};
  launch_rwkv_scan<T>(plan_rwkv_scan(in.version, in.batch_heads, in.heads, count, in.dim, multiprocessors),
                      RwkvParameters{carried.w.data(), carried.u.data()}, x, carried.state.data(), out.data(),
                      cuda.stream());
  cuda.synchronize();
  return download<T>(cuda, out.data(), elements);
}

// The block size a small grid gets (rwkv/cuda_plan.hpp: 128 threads halved down to one warp while
// the grid has under two blocks per SM) changes which block stages a token, not a lane's arithmetic:
// decode steps and a prefill with 128-, 64- and 32-thread blocks give bit-identical outputs and states.
template <class T>
void expect_rwkv_block_sizes_agree(CudaBackend& cuda, RwkvVersion version, DType dtype, std::int64_t dim) {
  const RwkvInputs in = make_rwkv_inputs(small_cell(2, dim, 40, dtype), 40, 29, version);
  std::vector<std::vector<float>> outputs, states;
  std::vector<int> threads;
  for (const int multiprocessors : {0, 1 << 20}) {  // 1 << 20: every grid is "small", one warp per block
    for (const std::int64_t prefill : {std::int64_t{39}, std::int64_t{40}}) {  // 39 + a decode step, or 40
      RwkvDeviceState carried(cuda, in);
      std::vector<float> out = rwkv_scan<T>(cuda, in, 0, prefill, carried, multiprocessors);
      if (prefill < in.tokens) {
        const std::vector<float> step = rwkv_scan<T>(cuda, in, prefill, 1, carried, multiprocessors);
        out.insert(out.end(), step.begin(), step.end());
      }
      outputs.push_back(std::move(out));
      states.push_back(carried.values(cuda));
    }
    threads.push_back(plan_rwkv_scan(version, in.batch_heads, in.heads, 1, dim, multiprocessors).threads);
  }
  ASSERT_EQ(threads[0], 128);
  ASSERT_EQ(threads[1], 32);
  for (std::size_t i = 0; i < 2; ++i) {  // the same split, 128-thread against one-warp blocks
    EXPECT_EQ(outputs[i], outputs[i + 2]) << "outputs, d " << dim << (i == 0 ? " prefill 39 + decode" : " prefill 40");
    EXPECT_EQ(states[i], states[i + 2]) << "state, d " << dim << (i == 0 ? " prefill 39 + decode" : " prefill 40");
  }
}

template <class T>
void expect_rwkv_decode_equals_last_prefill_row(CudaBackend& cuda, RwkvVersion version, DType dtype,
                                                std::int64_t length) {
  const RwkvInputs in = make_rwkv_inputs(small_cell(2, 64, length, dtype), length + 1, 17, version);
  RwkvDeviceState whole(cuda, in);
  const std::vector<float> rows = rwkv_scan<T>(cuda, in, 0, length + 1, whole);
  RwkvDeviceState stepped(cuda, in);
  if (length > 0) rwkv_scan<T>(cuda, in, 0, length, stepped);
  const std::vector<float> step = rwkv_scan<T>(cuda, in, length, 1, stepped);
  std::vector<float> last;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    const float* row = rows.data() + (bh * (length + 1) + length) * in.dim;
    last.insert(last.end(), row, row + in.dim);
  }
  const std::string where = dtype_name(dtype) + " L=" + std::to_string(length);
  // The same kernel either way (a decode step is the scan over one token, the same operations in the
  // same order), so equal to fp32 rounding at most.
  EXPECT_LT(relative_max_error(step, last), 1e-6) << where;
  EXPECT_LT(relative_max_error(stepped.values(cuda), whole.values(cuda)), 1e-6) << where;
}

inline void expect_rwkv_prefill_continues(CudaBackend& cuda, RwkvVersion version) {
  const RwkvInputs in = make_rwkv_inputs(small_cell(2, 64, 0, DType::float32), 160, 19, version);
  RwkvDeviceState whole(cuda, in);
  const std::vector<float> all = rwkv_scan<float>(cuda, in, 0, 160, whole);
  // Tokens [0, 100) then [100, 160), carrying the state: 100 is not a multiple of the token tile.
  RwkvDeviceState carried(cuda, in);
  const std::vector<float> head = rwkv_scan<float>(cuda, in, 0, 100, carried);
  const std::vector<float> tail = rwkv_scan<float>(cuda, in, 100, 60, carried);
  std::vector<float> joined;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    joined.insert(joined.end(), head.begin() + bh * 100 * in.dim, head.begin() + (bh + 1) * 100 * in.dim);
    joined.insert(joined.end(), tail.begin() + bh * 60 * in.dim, tail.begin() + (bh + 1) * 60 * in.dim);
  }
  EXPECT_LT(relative_max_error(joined, all), 1e-5);
  EXPECT_LT(relative_max_error(carried.values(cuda), whole.values(cuda)), 1e-5);
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace arch_bench::testing
