// The chunkwise tensor-core prefill of scalar-decay linear attention (common/chunk_scalar_decay.cuh)
// on a real device, through both mechanisms that use it. retnet and mamba2: the registered bf16
// prefill cells against the fp64 references at L around the 64-token chunk (outputs poisoned with
// NaN before the run, batch 2, several heads, groups for mamba2), other head sizes and head counts;
// and the chunked kernels against the recurrences: the same outputs and final state, and (retnet)
// a prefill that continues from a carried, nonzero state. The fused state pass (state_pass: fused,
// chunk_scalar_decay_fused.cuh) the same way, for all three mechanisms that run it (linear_attention
// too): the cells forced to each pass against the fp64 reference on every output row, the row's
// gpu_kernel naming the pass, and the fused kernels against the three kernels and the recurrence
// (outputs and final state, from a zero and from a carried state). Skipped without a device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "gpu/cuda_cell_checks.hpp"
#include "mechanisms/common/chunk_scalar_decay_option.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/linear_attention/cuda_plan.hpp"
#include "mechanisms/mamba2/cuda_plan.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/retnet/cuda_plan.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "gpu/chunk_prefill_checks.hpp"
#include "gpu/device_tokens.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/mamba2/cuda.hpp"
#include "mechanisms/mamba2/inputs.hpp"
#include "mechanisms/retnet/cuda.hpp"
#endif

namespace arch_bench {
namespace {

using testing::mechanism_cell;
#if ARCH_BENCH_HAVE_CUDA
using testing::PrefillRun;
#endif

class ChunkScalarDecayRetNetCells : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(ChunkScalarDecayRetNetCells, Bf16PrefillMatchesTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const std::int64_t length = GetParam();
  const Cell cell = mechanism_cell("retnet", 4, 64, length, DType::bfloat16, Phase::prefill, 2);
  ASSERT_TRUE(retnet_cuda_prefill_is_chunked(cell));
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, 8 * length, 23);
}

INSTANTIATE_TEST_SUITE_P(Lengths, ChunkScalarDecayRetNetCells, testing::kChunkBoundaryLengths,
                         testing::length_test_name);

TEST(ChunkScalarDecayGpu, RetNetHeadSizesAndOddHeadCountsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const std::int64_t dim : {16, 32, 128}) {
    for (const std::int64_t heads : {1, 3, 9}) {
      const Cell cell = mechanism_cell("retnet", heads, dim, 130, DType::bfloat16, Phase::prefill, 2);
      ASSERT_TRUE(retnet_cuda_prefill_is_chunked(cell));
      testing::expect_cell_matches_fp64_reference(*backend, cell, 29,
                                                  std::to_string(dim) + " " + std::to_string(heads));
    }
  }
}

Cell mamba2_cell(std::int64_t length, std::int64_t heads = 4, std::int64_t dim = 64, std::int64_t n = 128,
                 std::int64_t groups = 2) {
  Cell cell = mechanism_cell("mamba2", heads, dim, length, DType::bfloat16, Phase::prefill, 2);
  cell.options.set("state_size", n);
  cell.options.set("n_groups", groups);
  return cell;
}

// `cell` (a chunked one) prepared with seed 41 and run once (run_cuda_cell_once).
Accuracy run_mamba2_cell(Backend& backend, const Cell& cell) {
  EXPECT_TRUE(mamba2_cuda_prefill_is_chunked(cell));
  Accuracy accuracy;
  testing::run_cuda_cell_once(backend, cell, accuracy, 41);
  return accuracy;
}

class ChunkScalarDecayMamba2Cells : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(ChunkScalarDecayMamba2Cells, Bf16PrefillMatchesTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const std::int64_t length = GetParam();
  const Cell cell = mamba2_cell(length);
  ASSERT_TRUE(mamba2_cuda_prefill_is_chunked(cell));
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, 8 * length, 41);
}

INSTANTIATE_TEST_SUITE_P(Lengths, ChunkScalarDecayMamba2Cells, testing::kChunkBoundaryLengths,
                         testing::length_test_name);

TEST(ChunkScalarDecayGpu, Mamba2HeadAndStateSizesAndGroupsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  struct Size {
    std::int64_t heads, dim, n, groups;
  };
  for (const Size& s : {Size{1, 16, 16, 1}, Size{8, 64, 128, 1}, Size{4, 128, 128, 4}, Size{6, 48, 32, 3}}) {
    const Accuracy accuracy = run_mamba2_cell(*backend, mamba2_cell(130, s.heads, s.dim, s.n, s.groups));
    testing::expect_within_fp64_reference(accuracy, DType::bfloat16, std::to_string(s.dim) + " " + std::to_string(s.n));
  }
}

// Each mechanism's bf16 prefill cell with its state pass forced, at lengths around the chunk: every
// output row within the fp64 reference (outputs poisoned first), and gpu_kernel naming the pass.
using PassCase = std::tuple<std::string, std::string, std::int64_t>;  // mechanism, state_pass, L
class ChunkScalarDecayStatePassCells : public ::testing::TestWithParam<PassCase> {};

TEST_P(ChunkScalarDecayStatePassCells, Bf16PrefillMatchesTheFp64ReferenceAndNamesItsPass) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [mechanism, pass, length] = GetParam();
  Cell cell = mechanism == "mamba2" ? mamba2_cell(length)
                                    : mechanism_cell(mechanism, 4, 64, length, DType::bfloat16, Phase::prefill, 2);
  cell.options.set("state_pass", pass);
  const std::string where = mechanism + " " + pass + " L" + std::to_string(length);
  testing::expect_cuda_cell_matches_fp64_reference(*backend, cell, 8 * length, 47, where);
  auto prepared = find_mechanism(mechanism)->prepare(cell, 47, *backend);
  const auto* named = dynamic_cast<const NamesGpuKernel*>(prepared.get());
  ASSERT_NE(named, nullptr) << where;
  EXPECT_NE(named->gpu_kernel().find(pass == "fused" ? "fused state pass" : "three-kernel state pass"), std::string::npos)
      << named->gpu_kernel();
}

INSTANTIATE_TEST_SUITE_P(
    Passes, ChunkScalarDecayStatePassCells,
    ::testing::Combine(::testing::Values("retnet", "mamba2", "linear_attention"), ::testing::Values("fused", "three_kernel"),
                       ::testing::Values<std::int64_t>(1, 63, 64, 65, 300, 1000)),
    [](const ::testing::TestParamInfo<PassCase>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_L" + std::to_string(std::get<2>(info.param));
    });

TEST(ChunkScalarDecayGpu, FusedPassCoversOddHeadCountsHeadSizesAndColumnTiles) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  // dim 16..128, odd head counts; mamba2 at N 128 and N 16 (with these few heads the device's plan
  // takes 16-column tiles: the wider ones run in FusedPassAtItsWidestColumnTilesEqualsTheThreeKernels).
  for (const std::int64_t dim : {16, 48, 128}) {
    for (const std::int64_t heads : {1, 3}) {
      for (const char* mechanism : {"retnet", "linear_attention"}) {
        if (std::string(mechanism) == "linear_attention" && dim + 16 > 128) continue;
        Cell cell = mechanism_cell(mechanism, heads, dim, 130, DType::bfloat16, Phase::prefill, 2);
        cell.options.set("state_pass", std::string("fused"));
        testing::expect_cell_matches_fp64_reference(*backend, cell, 29,
                                                    std::string(mechanism) + " " + std::to_string(dim) + " " +
                                                        std::to_string(heads));
      }
    }
  }
  for (const std::int64_t n : {16, 128}) {
    Cell cell = mamba2_cell(130, 6, 64, n, 3);
    cell.options.set("state_pass", std::string("fused"));
    testing::expect_within_fp64_reference(run_mamba2_cell(*backend, cell), DType::bfloat16, "mamba2 N " + std::to_string(n));
  }
}

#if ARCH_BENCH_HAVE_CUDA

constexpr std::int64_t kHeads = 4;

// Tokens [first, first + rows) of every head through the recurrence or the chunkwise kernels (with
// the state pass `pass`, planned for `multiprocessors` SMs: the device's by default; 0 gives the fused
// pass its widest column tile), continuing from `state` (updated in place); out poisoned first.
PrefillRun run_retnet(CudaBackend& cuda, const AttentionInputs& in, std::int64_t first, std::int64_t rows,
                      Buffer<float>& state, bool chunked,
                      ScalarDecayStatePassChoice pass = ScalarDecayStatePassChoice::three_kernel,
                      int multiprocessors = -1) {
  testing::DeviceTokens<bf16> x(cuda, in, first, rows);  // out poisoned
  if (chunked) {
    const ChunkScalarDecayPlan plan = plan_chunk_scalar_decay(
        in.batch_heads, rows, in.dim, in.dim, pass, multiprocessors < 0 ? cuda.device().multiprocessors : multiprocessors);
    Buffer<float> chunk_states(cuda.allocator(), static_cast<std::size_t>(plan.workspace_state_elements));
    Buffer<float> chunk_log_decay(cuda.allocator(), static_cast<std::size_t>(plan.workspace_decay_elements));
    poison(cuda, chunk_states.data(), chunk_states.bytes());  // every element is written before it is read
    configure_retnet_chunked_prefill(plan);
    launch_retnet_chunked_prefill(plan, kHeads, x.q.data(), x.k.data(), x.v.data(), state.data(), x.out.data(),
                                  chunk_states.data(), chunk_log_decay.data(), cuda.stream());
    cuda.synchronize();
  } else {
    const ColumnRecurrencePlan plan = plan_retnet_cuda(in.batch_heads, rows, in.dim, in.dim, cuda.device().multiprocessors);
    launch_retnet_recurrence<bf16>(plan, kHeads, x.q.data(), x.k.data(), x.v.data(), state.data(), x.out.data(),
                                   cuda.stream());
    cuda.synchronize();
  }
  return {x.output(cuda), download<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()))};
}

// run_retnet as the checks' `run` (chunk_prefill_checks.hpp), its chunked form with state pass `pass`.
auto retnet_runs(CudaBackend& cuda, const AttentionInputs& in,
                 ScalarDecayStatePassChoice pass = ScalarDecayStatePassChoice::three_kernel) {
  return [&cuda, &in, pass](std::int64_t first, std::int64_t rows, Buffer<float>& state, bool chunked) {
    return run_retnet(cuda, in, first, rows, state, chunked, pass);
  };
}

TEST(ChunkScalarDecayGpu, ChunkedPrefillEqualsTheRecurrenceAndTheFusedPassTheThreeKernels) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {1, 63, 64, 65, 300, 1000}) {
    const AttentionInputs in =
        make_attention_inputs(mechanism_cell("retnet", kHeads, 64, length, DType::bfloat16, Phase::prefill, 2),
                              length, 53);
    for (const ScalarDecayStatePassChoice pass :
         {ScalarDecayStatePassChoice::three_kernel, ScalarDecayStatePassChoice::fused}) {
      testing::expect_chunked_prefill_equals_recurrence(cuda, in, length, retnet_runs(cuda, in, pass));
    }
    // Fused against the three kernels over the same tokens: the entering states differ only by U_c's
    // rounding, so outputs and final state agree well inside bf16's tolerance.
    Buffer<float> fused_state = testing::zero_state(cuda, in), three_state = testing::zero_state(cuda, in);
    const PrefillRun fused = run_retnet(cuda, in, 0, length, fused_state, true, ScalarDecayStatePassChoice::fused);
    const PrefillRun three = run_retnet(cuda, in, 0, length, three_state, true, ScalarDecayStatePassChoice::three_kernel);
    const std::string where = "L=" + std::to_string(length);
    EXPECT_LT(testing::relative_max_error(fused.out, three.out), dtype_tolerance(DType::bfloat16)) << where;
    EXPECT_LT(testing::relative_max_error(fused.state, three.state), dtype_tolerance(DType::bfloat16)) << where;
  }
}

// The tests above plan for the device: with their few heads the fused pass takes 16-column tiles, one
// fragment a warp. The tiles auto picks at B16 H8 (retnet d 64: 32 columns; mamba2 N 128: 32 columns,
// two fragments a warp) and the widest (64 columns at d 64: two fragments a warp) run here, planned
// as for no device (the widest tile), against the three kernels and the recurrence.
TEST(ChunkScalarDecayGpu, FusedPassAtItsWidestColumnTilesEqualsTheThreeKernels) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t dim : {64, 128}) {
    for (const std::int64_t length : {65, 1000}) {
      const AttentionInputs in =
          make_attention_inputs(mechanism_cell("retnet", kHeads, dim, length, DType::bfloat16, Phase::prefill, 2),
                                length, 61);
      const ChunkScalarDecayPlan plan =
          plan_chunk_scalar_decay(in.batch_heads, length, dim, dim, ScalarDecayStatePassChoice::fused, 0);
      ASSERT_EQ(plan.fused_column_tile, dim == 64 ? 64 : 32) << "the widest tile at d " << dim;
      const std::string where = "d " + std::to_string(dim) + " L " + std::to_string(length);
      Buffer<float> fused_state = testing::zero_state(cuda, in), three_state = testing::zero_state(cuda, in);
      const PrefillRun fused =
          run_retnet(cuda, in, 0, length, fused_state, true, ScalarDecayStatePassChoice::fused, 0);
      const PrefillRun three =
          run_retnet(cuda, in, 0, length, three_state, true, ScalarDecayStatePassChoice::three_kernel);
      EXPECT_LT(testing::relative_max_error(fused.out, three.out), dtype_tolerance(DType::bfloat16)) << where;
      EXPECT_LT(testing::relative_max_error(fused.state, three.state), dtype_tolerance(DType::bfloat16)) << where;
      Buffer<float> recurrent_state = testing::zero_state(cuda, in);
      const PrefillRun recurrent = run_retnet(cuda, in, 0, length, recurrent_state, false);
      EXPECT_LT(testing::relative_max_error(fused.out, recurrent.out), dtype_tolerance(DType::bfloat16)) << where;
      EXPECT_LT(testing::relative_max_error(fused.state, recurrent.state), dtype_tolerance(DType::bfloat16)) << where;
    }
  }
  // mamba2 at the shape of issue 41's cell, B16 H8 N 128 P 64 (short L: the fp64 check stays cheap),
  // forced fused: on a 132-SM device its plan is auto's, 256 blocks of 32 columns, two fragments a warp.
  Cell cell = mamba2_cell(130, 8, 64, 128, 1);
  cell.batch = 16;
  cell.options.set("state_pass", std::string("fused"));
  testing::expect_within_fp64_reference(run_mamba2_cell(*backend, cell), DType::bfloat16, "mamba2 B16 H8 N128");
}

TEST(ChunkScalarDecayGpu, ChunkedPrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const AttentionInputs in =
      make_attention_inputs(mechanism_cell("retnet", kHeads, 64, 0, DType::bfloat16, Phase::prefill, 2), 230, 59);
  for (const ScalarDecayStatePassChoice pass :
       {ScalarDecayStatePassChoice::three_kernel, ScalarDecayStatePassChoice::fused}) {
    testing::expect_chunked_prefill_continues_from_its_state(cuda, in, retnet_runs(cuda, in, pass));
  }
}

// mamba2: the chunked SSD and the recurrence over the same bf16 tokens from a zero state.
TEST(ChunkScalarDecayGpu, Mamba2ChunkedPrefillEqualsTheRecurrenceOutputsAndFinalState) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {1, 63, 64, 65, 300, 1000}) {
    const Cell cell = mamba2_cell(length);
    const Mamba2Shape shape{cell.batch, cell.heads, 2, cell.head_dim, 128};
    const Mamba2Inputs in = make_mamba2_inputs(cell, length, 43);
    const Mamba2TokenSlice slice = in.slice(0, length);
    Allocator& a = cuda.allocator();
    const auto device = [&](const std::vector<float>& host) {
      Buffer<bf16> buffer(a, host.size());
      upload<bf16>(cuda, host.data(), static_cast<std::int64_t>(host.size()), buffer.data());
      return buffer;
    };
    const Buffer<bf16> x = device(slice.x), dt_raw = device(slice.dt_raw), z = device(slice.z), B = device(slice.B),
                       C = device(slice.C);
    const Mamba2Tokens<bf16> tokens{x.data(), dt_raw.data(), z.data(), B.data(), C.data()};
    const std::vector<float> A = in.A();
    Buffer<float> A_d(a, A.size()), bias_d(a, in.dt_bias.size()), D_d(a, in.D.size());
    upload<float>(cuda, A.data(), static_cast<std::int64_t>(A.size()), A_d.data());
    upload<float>(cuda, in.dt_bias.data(), static_cast<std::int64_t>(in.dt_bias.size()), bias_d.data());
    upload<float>(cuda, in.D.data(), static_cast<std::int64_t>(in.D.size()), D_d.data());
    const Mamba2Parameters params{A_d.data(), bias_d.data(), D_d.data()};
    const std::size_t state_count = static_cast<std::size_t>(shape.rows() * shape.state_size * shape.head_dim);
    const std::int64_t out_count = static_cast<std::int64_t>(slice.x.size());
    Buffer<float> recurrent_state(a, state_count), chunked_state(a, state_count);
    Buffer<bf16> recurrent_out(a, slice.x.size()), chunked_out(a, slice.x.size());
    zero_async(cuda, recurrent_state.data(), recurrent_state.bytes());
    zero_async(cuda, chunked_state.data(), chunked_state.bytes());
    poison(cuda, recurrent_out.data(), recurrent_out.bytes());
    poison(cuda, chunked_out.data(), chunked_out.bytes());
    const Mamba2CudaPlan plan = plan_mamba2_cuda(shape, length);
    launch_mamba2_scan<bf16>(plan, params, tokens, recurrent_state.data(), recurrent_out.data(), cuda.stream());
    const ChunkScalarDecayPlan chunked = mamba2_chunked_prefill_plan(cell);
    Buffer<float> chunk_states(a, static_cast<std::size_t>(chunked.workspace_state_elements));
    Buffer<float> chunk_log_decay(a, static_cast<std::size_t>(chunked.workspace_decay_elements));
    poison(cuda, chunk_states.data(), chunk_states.bytes());
    configure_mamba2_chunked_prefill(chunked);
    launch_mamba2_chunked_prefill(chunked, plan, params, tokens, chunked_state.data(), chunked_out.data(),
                                  chunk_states.data(), chunk_log_decay.data(), cuda.stream());
    cuda.synchronize();
    const std::string where = "L=" + std::to_string(length);
    EXPECT_LT(testing::relative_max_error(download<bf16>(cuda, chunked_out.data(), out_count),
                                          download<bf16>(cuda, recurrent_out.data(), out_count)),
              dtype_tolerance(DType::bfloat16))
        << where;
    const std::int64_t states = static_cast<std::int64_t>(state_count);
    EXPECT_LT(testing::relative_max_error(download<float>(cuda, chunked_state.data(), states),
                                          download<float>(cuda, recurrent_state.data(), states)),
              dtype_tolerance(DType::bfloat16))
        << where;
  }
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
