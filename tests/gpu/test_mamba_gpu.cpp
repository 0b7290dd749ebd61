// mamba CUDA kernels on a real device: the registered mechanism's CUDA cells against the fp64
// reference (decode and prefill, bf16 and fp32, L around the scan's 256-token chunks, odd channel
// counts and state sizes), and the kernels against each other: a decode step after a prefill over L
// tokens equals the last row of a prefill over L + 1 with the same h, and a prefill continues from
// the h it is given. The split prefill (segments scanned by separate blocks, cuda_plan.hpp) equals
// the unsplit one and its CPU replay, continues from a carried h, and is what a batch-1 cell runs.
// The entry kernel (a thread per (channel, 4 state entries), cuda_entry.cu; `--scan-kernel entry`
// at N 8 or 16, and auto there) against its replay (its 16-byte and element copies), the reference
// and the lane kernel, and the cells with each scan_kernel value naming the kernel that ran. Every
// output is poisoned with NaN before the run. Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "mechanisms/registry.hpp"
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/mamba/cuda_replay.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "support/head_rows.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/mamba/check.hpp"
#endif

namespace arch_bench {
namespace {

Cell mamba_cell(Phase phase, std::int64_t length, DType dtype, std::int64_t heads = 2, std::int64_t dim = 8,
                std::int64_t n = 16, std::int64_t batch = 2) {
  Cell cell = testing::mechanism_cell("mamba", heads, dim, length, dtype, phase, batch);
  cell.options.set("state_size", static_cast<std::int64_t>(n));
  return cell;
}

using CellCase = std::tuple<Phase, DType, std::int64_t>;

class MambaGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(MambaGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, length] = GetParam();
  testing::expect_cuda_cell_matches_fp64_reference(*backend, mamba_cell(phase, length, dtype),
                                                   phase == Phase::decode ? 2 : 2 * length);
}

INSTANTIATE_TEST_SUITE_P(Cells, MambaGpuCells,
                         ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                                            ::testing::Values(DType::float32, DType::bfloat16),
                                            ::testing::Values<std::int64_t>(1, 100, 255, 256, 257, 1025, 2500)),
                         [](const ::testing::TestParamInfo<CellCase>& info) {
                           return phase_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) +
                                  "_L" + std::to_string(std::get<2>(info.param));
                         });

TEST(MambaGpu, OddChannelCountsAndStateSizesMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  struct Shape {
    std::int64_t heads, dim, n;
  };
  // d_inner 5 (an odd last channel run), N 1, 5, 17 (partial state groups and decode lanes), 256.
  for (const Shape s : {Shape{1, 5, 16}, Shape{1, 7, 1}, Shape{3, 3, 5}, Shape{2, 4, 17}, Shape{1, 4, 256}}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      Accuracy accuracy;
      ASSERT_NO_FATAL_FAILURE(testing::run_cuda_cell_once(
          *backend, mamba_cell(phase, 1100, DType::float32, s.heads, s.dim, s.n, 1), accuracy));
      testing::expect_within_fp64_reference(accuracy, DType::float32,
                                            "d_inner " + std::to_string(s.heads * s.dim) + " N " +
                                                std::to_string(s.n) + " " + phase_name(phase));
    }
  }
}

#if ARCH_BENCH_HAVE_CUDA

// Tokens [first, first + count) of a layer's inputs on the device, in the kernels' layouts.
template <class T>
struct DeviceSequence {
  DeviceSequence(CudaBackend& cuda, const MambaInputs& in, std::int64_t first, std::int64_t count)
      : u(cuda.allocator(), static_cast<std::size_t>(in.rows() * count)),
        dt_raw(cuda.allocator(), u.size()),
        z(cuda.allocator(), u.size()),
        B(cuda.allocator(), static_cast<std::size_t>(in.batch * count * in.state_size)),
        C(cuda.allocator(), B.size()),
        out(cuda.allocator(), u.size()) {
    auto rows = [&](const std::vector<float>& x) {
      std::vector<float> r;
      for (std::int64_t row = 0; row < in.rows(); ++row) r.insert(r.end(), in.row(x, row) + first, in.row(x, row) + first + count);
      return r;
    };
    auto tokens = [&](const std::vector<float>& x) {
      std::vector<float> r;
      for (std::int64_t b = 0; b < in.batch; ++b) {
        r.insert(r.end(), in.token(x, b, first), in.token(x, b, first) + count * in.state_size);
      }
      return r;
    };
    upload<T>(cuda, rows(in.u).data(), static_cast<std::int64_t>(u.size()), u.data());
    upload<T>(cuda, rows(in.dt_raw).data(), static_cast<std::int64_t>(u.size()), dt_raw.data());
    upload<T>(cuda, rows(in.z).data(), static_cast<std::int64_t>(u.size()), z.data());
    upload<T>(cuda, tokens(in.B).data(), static_cast<std::int64_t>(B.size()), B.data());
    upload<T>(cuda, tokens(in.C).data(), static_cast<std::int64_t>(B.size()), C.data());
    poison(cuda, out.data(), out.bytes());
  }
  MambaTokens<T> view() const { return {u.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  Buffer<T> u, dt_raw, z, B, C, out;
};

struct DeviceLayer {
  DeviceLayer(CudaBackend& cuda, const MambaInputs& in)
      : A(cuda.allocator(), in.A_log.size()),
        dt_bias(cuda.allocator(), in.dt_bias.size()),
        D(cuda.allocator(), in.D.size()),
        state(cuda.allocator(), static_cast<std::size_t>(in.rows() * in.state_size)) {
    const std::vector<float> a = in.A();
    upload<float>(cuda, a.data(), static_cast<std::int64_t>(a.size()), A.data());
    upload<float>(cuda, in.dt_bias.data(), static_cast<std::int64_t>(in.dt_bias.size()), dt_bias.data());
    upload<float>(cuda, in.D.data(), static_cast<std::int64_t>(in.D.size()), D.data());
    zero_async(cuda, state.data(), state.bytes());
  }
  MambaParameters view() const { return {A.data(), dt_bias.data(), D.data()}; }
  // h as it is on the device now.
  std::vector<float> state_values(CudaBackend& cuda) const {
    return download<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()));
  }
  Buffer<float> A, dt_bias, D, state;
};

// The prefill plan of tokens [.., count) cut into `segments` (1: unsplit), for `kernel`.
MambaPrefillPlan prefill_plan(const MambaInputs& in, std::int64_t count, std::int64_t segments,
                              MambaScanKernel kernel = MambaScanKernel::lane) {
  return split_mamba_prefill(plan_mamba_prefill({in.batch, in.channels, in.state_size}, count, 0, kernel), segments);
}

// Prefill of tokens [first, first + count) continuing from layer.state, in `segments`; returns out
// [rows, count]. The workspace is poisoned: the kernels must not read what they did not write.
template <class T>
std::vector<float> prefill(CudaBackend& cuda, const MambaInputs& in, std::int64_t first, std::int64_t count,
                           DeviceLayer& layer, std::int64_t segments = 1, MambaScanKernel kernel = MambaScanKernel::lane) {
  DeviceSequence<T> x(cuda, in, first, count);
  const MambaPrefillPlan plan = prefill_plan(in, count, segments, kernel);
  EXPECT_EQ(plan.segments, segments) << "L " << count;
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace_floats));
  poison(cuda, workspace.data(), workspace.bytes());
  launch_mamba_prefill<T>(plan, layer.view(), x.view(), layer.state.data(), workspace.data(), x.out.data(),
                          cuda.stream());
  cuda.synchronize();
  return download<T>(cuda, x.out.data(), static_cast<std::int64_t>(x.out.size()));
}

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, std::int64_t length) {
  const MambaInputs in = make_mamba_inputs(mamba_cell(Phase::prefill, length + 1, dtype), length + 1, 23);
  DeviceLayer whole(cuda, in);
  const std::vector<float> rows = prefill<T>(cuda, in, 0, length + 1, whole);
  DeviceLayer stepped(cuda, in);
  if (length > 0) prefill<T>(cuda, in, 0, length, stepped);
  DeviceSequence<T> token(cuda, in, length, 1);
  launch_mamba_decode<T>(plan_mamba_decode({in.batch, in.channels, in.state_size}), stepped.view(), token.view(),
                         stepped.state.data(), token.out.data(), cuda.stream());
  cuda.synchronize();
  const std::vector<float> step = download<T>(cuda, token.out.data(), in.rows());
  const std::vector<float> last = testing::row_of_every_head(rows, in.rows(), length + 1, length, 1);
  const std::string where = dtype_name(dtype) + " L=" + std::to_string(length);
  EXPECT_LT(testing::relative_max_error(step, last), dtype_tolerance(dtype)) << where;
  EXPECT_LT(testing::relative_max_error(stepped.state_values(cuda), whole.state_values(cuda)), 1e-5) << where;
}

TEST(MambaGpu, DecodeAfterPrefillEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 255, 256, 1500}) {
    expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, length);
    expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, length);
  }
}

// Unsplit, then with the head (1300 tokens, 6 chunks) in 2 and 3 segments and the tail (700
// tokens, 3 chunks) in 3: the carried h enters a split prefill through its combine pass.
TEST(MambaGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const MambaInputs in = make_mamba_inputs(mamba_cell(Phase::prefill, 2000, DType::float32), 2000, 29);
  DeviceLayer whole(cuda, in);
  const std::vector<float> all = prefill<float>(cuda, in, 0, 2000, whole);
  struct Split {
    std::int64_t head, tail;
  };
  for (const Split segments : {Split{1, 1}, Split{2, 3}, Split{3, 3}}) {
    // Tokens [0, 1300) then [1300, 2000), carrying h: 1300 is not a chunk boundary.
    DeviceLayer carried(cuda, in);
    const std::vector<float> head = prefill<float>(cuda, in, 0, 1300, carried, segments.head);
    const std::vector<float> tail = prefill<float>(cuda, in, 1300, 700, carried, segments.tail);
    const std::string where = "segments " + std::to_string(segments.head) + " + " + std::to_string(segments.tail);
    EXPECT_LT(testing::relative_max_error(testing::join_rows(head, 1300, tail, 700, in.rows(), 1), all), 1e-5) << where;
    EXPECT_LT(testing::relative_max_error(carried.state_values(cuda), whole.state_values(cuda)), 1e-5) << where;
  }
}

// Tokens [first, first + count) of a layer's inputs on the host, in the kernels' layouts (fp32).
struct HostSequence {
  HostSequence(const MambaInputs& in, std::int64_t first, std::int64_t count) {
    for (std::int64_t r = 0; r < in.rows(); ++r) {
      for (auto [from, to] : {std::pair{&in.u, &u}, {&in.dt_raw, &dt_raw}, {&in.z, &z}}) {
        to->insert(to->end(), in.row(*from, r) + first, in.row(*from, r) + first + count);
      }
    }
    for (std::int64_t b = 0; b < in.batch; ++b) {
      B.insert(B.end(), in.token(in.B, b, first), in.token(in.B, b, first) + count * in.state_size);
      C.insert(C.end(), in.token(in.C, b, first), in.token(in.C, b, first) + count * in.state_size);
    }
  }
  MambaTokens<float> view() const { return {u.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  std::vector<float> u, dt_raw, z, B, C;
};

// The kernels against their CPU replay (cuda_replay.cpp, the same operations in the same order but
// exp2f for ex2.approx): nearly equal outputs and final h, at 9 channels (a block with one active
// warp), lengths off and across the chunk edge, from a non-zero h, unsplit and split (1300 tokens:
// 6 chunks in 2, 3 and 6 segments); and the split outputs and h against the unsplit ones.
TEST(MambaGpu, PrefillEqualsItsCpuReplaySplitOrNot) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  struct Case {
    std::int64_t length, segments;
  };
  for (const Case c : {Case{257, 1}, Case{1300, 1}, Case{1300, 2}, Case{1300, 3}, Case{1300, 6}}) {
    const std::int64_t length = c.length;
    const std::string where = "L " + std::to_string(length) + ", " + std::to_string(c.segments) + " segments";
    const MambaInputs in = make_mamba_inputs(mamba_cell(Phase::prefill, length + 100, DType::float32, 1, 9), length + 100, 53);
    DeviceLayer layer(cuda, in);
    prefill<float>(cuda, in, 0, 100, layer);  // h after 100 tokens: the replay starts from it too
    const std::int64_t states = static_cast<std::int64_t>(layer.state.size());
    std::vector<float> state = layer.state_values(cuda);
    DeviceLayer unsplit(cuda, in);
    upload<float>(cuda, state.data(), states, unsplit.state.data());
    const std::vector<float> device = prefill<float>(cuda, in, 100, length, layer, c.segments);
    const std::vector<float> device_unsplit = prefill<float>(cuda, in, 100, length, unsplit);
    const HostSequence x(in, 100, length);
    const std::vector<float> A = in.A();
    std::vector<float> replayed(device.size());
    replay_mamba_prefill<float>(prefill_plan(in, length, c.segments), {A.data(), in.dt_bias.data(), in.D.data()},
                                x.view(), state.data(), replayed.data());
    const std::vector<float> device_state = layer.state_values(cuda);
    EXPECT_LT(testing::relative_max_error(device, replayed), 1e-5) << where;
    EXPECT_LT(testing::relative_max_error(device_state, state), 1e-5) << where;
    EXPECT_LT(testing::relative_max_error(device, device_unsplit), 1e-5) << where;
    EXPECT_LT(testing::relative_max_error(device_state, unsplit.state_values(cuda)), 1e-5) << where;
  }
}

// bf16 split against unsplit on the device: the same tiles and rounding of the outputs, so the two
// differ by the segment edges' fp32 rounding and at most one bf16 rounding of an output.
TEST(MambaGpu, SplitPrefillEqualsUnsplitBf16) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const MambaInputs in = make_mamba_inputs(mamba_cell(Phase::prefill, 2500, DType::bfloat16), 2500, 79);
  DeviceLayer whole(cuda, in);
  const std::vector<float> all = prefill<bf16>(cuda, in, 0, 2500, whole);
  for (const std::int64_t segments : {2, 5, 10}) {
    DeviceLayer split(cuda, in);
    const std::vector<float> out = prefill<bf16>(cuda, in, 0, 2500, split, segments);
    EXPECT_LT(testing::relative_max_error(out, all), 1e-2) << segments;
    EXPECT_LT(testing::relative_max_error(split.state_values(cuda), whole.state_values(cuda)), 1e-5) << segments;
  }
}

// Issue 39's shape at batch 1 (d_inner 512) on this device: the cell's plan splits the sequence,
// and the registered cell, run once, is within the fp64 reference in both dtypes.
TEST(MambaGpu, Batch1CellRunsTheSplitPrefill) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const std::int64_t length = 2048;
  const MambaPrefillPlan plan = plan_mamba_prefill({1, 512, 16}, length, cuda.device().multiprocessors);
  EXPECT_GT(plan.segments, 1) << cuda.device().multiprocessors << " SMs";
  for (const DType dtype : {DType::float32, DType::bfloat16}) {
    testing::expect_cuda_cell_matches_fp64_reference(*backend, mamba_cell(Phase::prefill, length, dtype, 8, 64, 16, 1),
                                                     length);
  }
}


// ---------------------------------------------------------------------------------------------
// The entry kernel (cuda_entry.cu: a thread per (channel, 4 state entries)).

constexpr MambaScanKernel kEntry = MambaScanKernel::entry;

// HostSequence in storage T (the replay reads what the device reads).
template <class T>
struct HostStored {
  explicit HostStored(const HostSequence& x) {
    for (auto [from, to] : {std::pair{&x.u, &u}, {&x.dt_raw, &dt_raw}, {&x.z, &z}, {&x.B, &B}, {&x.C, &C}}) {
      for (const float v : *from) to->push_back(from_float<T>(v));
    }
  }
  MambaTokens<T> view() const { return {u.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  std::vector<T> u, dt_raw, z, B, C;
};

// Device against its CPU replay (exp2f for ex2.approx) and against the fp64 reference: N 8 and 16,
// fp32 and bf16, lengths inside a tile, across tiles and chunks, from a non-zero h (the first 100
// tokens' state), unsplit and in 3 segments. 33 channels: a full block of
// 32 and a block of one channel. L 1304 (a multiple of 8) takes the 16-byte cp.async copies in
// both dtypes, 1300 in fp32 only, 1 and 17 the element-by-element copies (launch_aligned_or_not).
template <class T>
void expect_entry_matches_replay_and_reference(CudaBackend& cuda, DType dtype) {
  const double outputs_tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-2;  // one bf16 rounding apart at most
  for (const std::int64_t n : {16, 8}) {
    const std::int64_t channels = 33;
    for (const std::int64_t length : {1, 17, 1300, 1304}) {
      for (const std::int64_t segments : {1, 3}) {
        if (segments > (length + kMambaScanChunk - 1) / kMambaScanChunk) continue;
        const std::string where = dtype_name(dtype) + " entry N " + std::to_string(n) + " L " +
                                  std::to_string(length) + " segments " + std::to_string(segments);
        const MambaInputs in =
            make_mamba_inputs(mamba_cell(Phase::prefill, length + 100, dtype, 1, channels, n, 2), length + 100, 107);
        DeviceLayer layer(cuda, in);
        prefill<T>(cuda, in, 0, 100, layer, 1, kEntry);
        std::vector<float> state = layer.state_values(cuda);
        const std::vector<float> device = prefill<T>(cuda, in, 100, length, layer, segments, kEntry);
        const HostStored<T> x(HostSequence(in, 100, length));
        const std::vector<float> A = in.A();
        std::vector<T> replayed(device.size());
        replay_mamba_prefill<T>(prefill_plan(in, length, segments, kEntry), {A.data(), in.dt_bias.data(), in.D.data()},
                                x.view(), state.data(), replayed.data());
        std::vector<float> replayed_float;
        for (const T v : replayed) replayed_float.push_back(to_float(v));
        EXPECT_LT(testing::relative_max_error(device, replayed_float), outputs_tolerance) << where;
        EXPECT_LT(testing::relative_max_error(layer.state_values(cuda), state), 1e-5) << where;
        // The whole sequence from h = 0 against the fp64 reference.
        DeviceLayer fresh(cuda, in);
        const std::vector<float> whole = prefill<T>(cuda, in, 0, length + 100, fresh, segments, kEntry);
        testing::expect_within_fp64_reference(check_mamba_prefill<float>(in, whole.data()), dtype, where);
      }
    }
  }
}

TEST(MambaGpu, EntryKernelMatchesItsReplayAndTheReferenceFp32) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  expect_entry_matches_replay_and_reference<float>(cuda_backend_of(*backend), DType::float32);
}

TEST(MambaGpu, EntryKernelMatchesItsReplayAndTheReferenceBf16) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  expect_entry_matches_replay_and_reference<bf16>(cuda_backend_of(*backend), DType::bfloat16);
}

// Entry and lane kernels on the device, fp32, unsplit and split: the same scan in another order.
TEST(MambaGpu, EntryKernelEqualsTheLaneKernel) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const MambaInputs in = make_mamba_inputs(mamba_cell(Phase::prefill, 3000, DType::float32, 1, 40, 16, 2), 3000, 109);
  DeviceLayer lane(cuda, in);
  const std::vector<float> lane_out = prefill<float>(cuda, in, 0, 3000, lane);
  for (const std::int64_t segments : {1, 4}) {
    DeviceLayer entry(cuda, in);
    const std::vector<float> out = prefill<float>(cuda, in, 0, 3000, entry, segments, kEntry);
    EXPECT_LT(testing::relative_max_error(out, lane_out), 1e-5) << "segments " << segments;
    EXPECT_LT(testing::relative_max_error(entry.state_values(cuda), lane.state_values(cuda)), 1e-5)
        << "segments " << segments;
  }
}

// The registered cells with each scan_kernel value: within the reference, and the row's gpu_kernel
// names the kernel that ran. Issue 39's batch-1 shape (d_inner 512, L 2048: the entry plan splits
// it on any device of 24 SMs or more) and a decode cell whose context runs the entry prefill.
TEST(MambaGpu, CellsRunTheScanKernelTheOptionPicks) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const Mechanism* mamba = find_mechanism("mamba");
  ASSERT_NE(mamba, nullptr);
  for (const char* choice : {"auto", "entry", "lane"}) {
    for (const DType dtype : {DType::float32, DType::bfloat16}) {
      Cell cell = mamba_cell(Phase::prefill, 2048, dtype, 8, 64, 16, 1);
      cell.options.set("scan_kernel", std::string(choice));
      testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, 2048, 11, choice);
      const auto prepared = mamba->prepare(cell, 11, *backend);
      const auto* named = dynamic_cast<const NamesGpuKernel*>(prepared.get());
      ASSERT_NE(named, nullptr);
      EXPECT_EQ(named->gpu_kernel(), mamba_gpu_kernel_name(cell));
    }
  }
  Cell decode = mamba_cell(Phase::decode, 1500, DType::bfloat16, 2, 8, 8, 2);
  decode.options.set("scan_kernel", std::string("entry"));
  testing::expect_cuda_cell_matches_fp64_reference(*backend, decode, 2);
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
