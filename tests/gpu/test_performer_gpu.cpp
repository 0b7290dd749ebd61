// performer CUDA kernels on a real device: the registered mechanism's CUDA cells against the fp64
// reference (decode and prefill, bf16 and fp32, favor+ and trig, L around chunk boundaries, odd m
// and head widths), and the kernels against each other: a decode at position L equals the last row
// of a prefill over L + 1 tokens with the same (S, z, M), and a prefill continues from the state it
// is given. Every output is poisoned with NaN before the run. Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "mechanisms/registry.hpp"
#include "gpu/cuda_cell_checks.hpp"
#include "support/gpu.hpp"
#include "support/mechanism_fixtures.hpp"

#if ARCH_BENCH_HAVE_CUDA
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/gpu_kernel_name.hpp"
#include "mechanisms/performer/cuda.hpp"
#include "mechanisms/performer/cuda_replay.hpp"
#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "gpu/device_tokens.hpp"
#include "support/head_rows.hpp"
#endif

namespace arch_bench {
namespace {

using testing::small_cell;

Cell performer_cell(Phase phase, std::int64_t length, DType dtype, const std::string& map, std::int64_t dim = 64,
                    std::int64_t features = 128) {
  Cell cell = small_cell(2, dim, length, dtype, phase);
  cell.mechanism = "performer";
  cell.options.set("feature_map", std::string(map));
  cell.options.set("features", static_cast<std::int64_t>(features));
  // Trig denominators come close to 0 at unit scale (see the CPU tests); x0.3 keeps them away.
  if (map == "trig") cell.options.set("qk_scale", 0.3);
  return cell;
}

using CellCase = std::tuple<Phase, DType, std::string, std::int64_t>;

class PerformerGpuCells : public ::testing::TestWithParam<CellCase> {};

TEST_P(PerformerGpuCells, RunOnceAndMatchTheFp64Reference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  const auto& [phase, dtype, map, length] = GetParam();
  Accuracy accuracy;
  ASSERT_NO_FATAL_FAILURE(testing::run_cuda_cell_once(*backend, performer_cell(phase, length, dtype, map), accuracy));
  testing::expect_within_fp64_reference(accuracy, dtype);
  EXPECT_EQ(accuracy.rows_checked, phase == Phase::decode ? 2 : 2 * length);
  EXPECT_EQ(accuracy.nonpositive_denominators, 0);
  ASSERT_TRUE(accuracy.approx_rel_l2_vs_softmax.has_value());
  EXPECT_TRUE(std::isfinite(*accuracy.approx_rel_l2_vs_softmax));
}

INSTANTIATE_TEST_SUITE_P(
    Cells, PerformerGpuCells,
    ::testing::Combine(::testing::Values(Phase::decode, Phase::prefill),
                       ::testing::Values(DType::float32, DType::bfloat16), ::testing::Values("favor+", "trig"),
                       ::testing::Values<std::int64_t>(1, 15, 63, 64, 65, 300)),
    [](const ::testing::TestParamInfo<CellCase>& info) {
      const std::string map = std::get<2>(info.param) == "trig" ? "trig" : "favor";
      return phase_name(std::get<0>(info.param)) + "_" + dtype_name(std::get<1>(info.param)) + "_" + map + "_L" +
             std::to_string(std::get<3>(info.param));
    });

TEST(PerformerGpu, OddFeatureCountsAndHeadWidthsMatchTheReference) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  struct Shape {
    std::int64_t dim, features;
  };
  for (const Shape s : {Shape{16, 2}, Shape{48, 100}, Shape{100, 1000}, Shape{256, 256}, Shape{32, 4096}}) {
    for (const Phase phase : {Phase::decode, Phase::prefill}) {
      Accuracy accuracy;
      ASSERT_NO_FATAL_FAILURE(testing::run_cuda_cell_once(
          *backend, performer_cell(phase, 130, DType::float32, "favor+", s.dim, s.features), accuracy));
      testing::expect_within_fp64_reference(
          accuracy, DType::float32, std::to_string(s.dim) + " m " + std::to_string(s.features) + " " + phase_name(phase));
    }
  }
}

TEST(PerformerGpu, ThePublishedStabiliserIsRefused) {
  Cell cell = performer_cell(Phase::prefill, 64, DType::float32, "favor+");
  cell.options.set("favor_stabilizer", std::string("published"));
  EXPECT_TRUE(find_mechanism("performer")->unsupported_on(cell, "cuda"));
}

#if ARCH_BENCH_HAVE_CUDA

// A head's projection, packed, and an empty (S, z, M) on the device.
struct DeviceHeads {
  DeviceHeads(CudaBackend& cuda, const PerformerShape& shape, std::uint64_t seed)
      : projection(cuda.allocator(), static_cast<std::size_t>(performer_projection_floats(shape))),
        state(cuda.allocator(), static_cast<std::size_t>(shape.batch_heads * shape.features * shape.dv)),
        normalizer(cuda.allocator(), static_cast<std::size_t>(shape.batch_heads * shape.features)),
        running_max(cuda.allocator(), static_cast<std::size_t>(shape.batch_heads)) {
    std::vector<float> packed(projection.size());
    pack_performer_projection(performer_projection(shape.kind, shape.features, shape.dk, seed), packed.data());
    upload<float>(cuda, packed.data(), static_cast<std::int64_t>(packed.size()), projection.data());
    launch_performer_reset_state(shape.batch_heads, shape.features, shape.dv, state.data(), normalizer.data(),
                                 running_max.data(), cuda.stream());
  }
  std::vector<float> all_state(CudaBackend& cuda) const {
    std::vector<float> out = download<float>(cuda, state.data(), static_cast<std::int64_t>(state.size()));
    const std::vector<float> z = download<float>(cuda, normalizer.data(), static_cast<std::int64_t>(normalizer.size()));
    out.insert(out.end(), z.begin(), z.end());
    return out;
  }
  Buffer<float> projection, state, normalizer, running_max;
};

// path: stage 1 on SIMT cores or (bf16) on tensor cores from W split on the device.
template <class T>
std::vector<float> prefill(CudaBackend& cuda, const PerformerShape& shape, const AttentionInputs& in,
                           std::int64_t first, std::int64_t rows, DeviceHeads& heads,
                           PerformerPrefillPath path = PerformerPrefillPath::simt) {
  const PerformerPrefillPlan plan = plan_performer_prefill(shape, rows, path);
  testing::DeviceTokens<T> x(cuda, in, first, rows);
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(plan.workspace.floats));
  poison(cuda, workspace.data(), workspace.bytes());
  Buffer<bf16> split;
  if (path == PerformerPrefillPath::tensor_core_bf16) {
    split = Buffer<bf16>(cuda.allocator(), static_cast<std::size_t>(plan.tensor_core.split_elements()));
    poison(cuda, split.data(), split.bytes());  // the split kernel must write every element, padding included
    launch_performer_split_projection(plan.tensor_core, heads.projection.data(), split.data(), cuda.stream());
  }
  launch_performer_prefill<T>(plan, heads.projection.data(), split.data(), x.q.data(), x.k.data(), x.v.data(),
                              heads.state.data(), heads.normalizer.data(), heads.running_max.data(), x.out.data(),
                              workspace.data(), cuda.stream());
  return x.output(cuda);
}

template <class T>
std::vector<float> decode(CudaBackend& cuda, const PerformerShape& shape, const AttentionInputs& in, std::int64_t t,
                          DeviceHeads& heads) {
  const PerformerDecodePlan plan = plan_performer_decode(shape);
  testing::DeviceTokens<T> x(cuda, in, t, 1);
  Buffer<float> denominators(cuda.allocator(), static_cast<std::size_t>(in.batch_heads));
  launch_performer_decode<T>(plan, heads.projection.data(), x.q.data(), x.k.data(), x.v.data(), heads.state.data(),
                             heads.normalizer.data(), heads.running_max.data(), x.out.data(), denominators.data(),
                             cuda.stream());
  return x.output(cuda);
}

template <class T>
void expect_decode_equals_last_prefill_row(CudaBackend& cuda, DType dtype, PerformerFeatures kind,
                                           std::int64_t length) {
  const std::string map = performer_features_name(kind);
  const Cell cell = performer_cell(Phase::prefill, length + 1, dtype, map);
  const PerformerShape shape{cell.batch_heads(), cell.head_dim, cell.head_dim, std::get<std::int64_t>(*cell.options.find("features")), kind};
  const AttentionInputs in = make_attention_inputs(cell, length + 1, 17);
  DeviceHeads whole(cuda, shape, 5);
  const std::vector<float> rows = prefill<T>(cuda, shape, in, 0, length + 1, whole);
  DeviceHeads stepped(cuda, shape, 5);
  if (length > 0) prefill<T>(cuda, shape, in, 0, length, stepped);
  const std::vector<float> step = decode<T>(cuda, shape, in, length, stepped);
  const std::vector<float> last = testing::row_of_every_head(rows, in.batch_heads, length + 1, length, in.dim);
  const std::string where = dtype_name(dtype) + " " + map + " L=" + std::to_string(length);
  EXPECT_LT(testing::relative_max_error(step, last), dtype_tolerance(dtype)) << where;
  EXPECT_LT(testing::relative_max_error(stepped.all_state(cuda), whole.all_state(cuda)), 1e-5) << where;
  const std::vector<float> m_whole = download<float>(cuda, whole.running_max.data(), in.batch_heads);
  const std::vector<float> m_step = download<float>(cuda, stepped.running_max.data(), in.batch_heads);
  EXPECT_LT(testing::relative_max_error(m_step, m_whole), 1e-6) << where;
}

TEST(PerformerGpu, DecodeAtLEqualsLastRowOfPrefillOverLPlusOneTokens) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  for (const std::int64_t length : {0, 1, 63, 64, 65, 300}) {
    for (const PerformerFeatures kind : {PerformerFeatures::favor_plus, PerformerFeatures::trig}) {
      expect_decode_equals_last_prefill_row<float>(cuda, DType::float32, kind, length);
      expect_decode_equals_last_prefill_row<bf16>(cuda, DType::bfloat16, kind, length);
    }
  }
}

TEST(PerformerGpu, PrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  const Cell cell = performer_cell(Phase::prefill, 160, DType::float32, "favor+");
  const PerformerShape shape{cell.batch_heads(), cell.head_dim, cell.head_dim, std::get<std::int64_t>(*cell.options.find("features")),
                             PerformerFeatures::favor_plus};
  const AttentionInputs in = make_attention_inputs(cell, 160, 19);
  DeviceHeads whole(cuda, shape, 7);
  const std::vector<float> all = prefill<float>(cuda, shape, in, 0, 160, whole);
  // Tokens [0, 100) then [100, 160), carrying (S, z, M): 100 is not a chunk boundary.
  DeviceHeads carried(cuda, shape, 7);
  const std::vector<float> head = prefill<float>(cuda, shape, in, 0, 100, carried);
  const std::vector<float> tail = prefill<float>(cuda, shape, in, 100, 60, carried);
  EXPECT_LT(testing::relative_max_error(testing::join_rows(head, 100, tail, 60, in.batch_heads, in.dim), all), 1e-5);
  EXPECT_LT(testing::relative_max_error(carried.all_state(cuda), whole.all_state(cuda)), 1e-5);
}

// The bf16 prefill on tensor cores (features from W split into bf16 W_hi + W_lo; chunk states and
// outputs as wmma bf16 products): the same outputs as the SIMT prefill within bf16's tolerance, and
// as its CPU replay (cuda_replay.hpp), over head widths, feature counts and value widths that are
// and are not multiples of 16 or of the 64-wide tiles, both maps, L around the 64-token chunks; the
// state it leaves is the replay's to 1e-4 (K~ and S go in as hi + lo, ~2^-17; what is left is fp32
// order and expf's last bits) and the SIMT prefill's to 1e-3 (stage 1's features differ from the
// SIMT kernel's by up to ~6e-5, the replay's feature check).
TEST(PerformerGpu, TensorCorePrefillMatchesTheSimtPrefillAndItsReplay) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  struct Case {
    std::int64_t dim, features, length;
    const char* map;
  };
  for (const Case c : {Case{16, 16, 1, "favor+"}, Case{64, 256, 300, "favor+"}, Case{64, 256, 300, "trig"},
                       Case{48, 100, 65, "favor+"}, Case{100, 30, 63, "trig"}, Case{128, 128, 130, "favor+"},
                       Case{256, 4096, 70, "favor+"}, Case{64, 128, 1000, "trig"}}) {  // 16 chunks through the scan
    const Cell cell = performer_cell(Phase::prefill, c.length, DType::bfloat16, c.map, c.dim, c.features);
    const PerformerFeatures kind = *parse_performer_features(c.map);
    const PerformerShape shape{cell.batch_heads(), c.dim, c.dim, c.features, kind};
    const AttentionInputs in = make_attention_inputs(cell, c.length, 29);
    const std::string where = std::string(c.map) + " d " + std::to_string(c.dim) + " m " + std::to_string(c.features) +
                              " L " + std::to_string(c.length);
    DeviceHeads simt(cuda, shape, 11), tensor_core(cuda, shape, 11);
    const std::vector<float> expected = prefill<bf16>(cuda, shape, in, 0, c.length, simt);
    const std::vector<float> got =
        prefill<bf16>(cuda, shape, in, 0, c.length, tensor_core, PerformerPrefillPath::tensor_core_bf16);
    EXPECT_LT(testing::relative_max_error(got, expected), dtype_tolerance(DType::bfloat16)) << where;
    EXPECT_LT(testing::relative_max_error(tensor_core.all_state(cuda), simt.all_state(cuda)), 1e-3) << where;

    std::vector<float> packed(static_cast<std::size_t>(performer_projection_floats(shape)));
    pack_performer_projection(performer_projection(kind, c.features, c.dim, 11), packed.data());
    const PerformerSplitProjection split =
        split_performer_projection(packed.data(), static_cast<int>(c.dim), static_cast<int>(shape.projection_rows()));
    PerformerReplayState state = performer_replay_empty_state(shape);
    const std::vector<float> replayed =
        replay_performer_tensor_core_prefill(shape, c.length, split, in.q.data(), in.k.data(), in.v.data(), state);
    EXPECT_LT(testing::relative_max_error(got, replayed), dtype_tolerance(DType::bfloat16)) << where;
    std::vector<float> replayed_state = state.state;
    replayed_state.insert(replayed_state.end(), state.normalizer.begin(), state.normalizer.end());
    EXPECT_LT(testing::relative_max_error(tensor_core.all_state(cuda), replayed_state), 1e-4) << where;
    const std::vector<float> m_device =
        download<float>(cuda, tensor_core.running_max.data(), static_cast<std::int64_t>(tensor_core.running_max.size()));
    // M is a log-scale: its error is absolute (a relative error of e^M), ~1e-6 from accumulation order.
    for (std::size_t h = 0; h < m_device.size(); ++h) EXPECT_NEAR(m_device[h], state.running_max[h], 1e-4) << where;
  }
}

TEST(PerformerGpu, TensorCorePrefillContinuesFromTheStateItIsGiven) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  CudaBackend& cuda = cuda_backend_of(*backend);
  constexpr PerformerPrefillPath kTensorCore = PerformerPrefillPath::tensor_core_bf16;
  for (const char* map : {"favor+", "trig"}) {
    const Cell cell = performer_cell(Phase::prefill, 160, DType::bfloat16, map);
    const PerformerShape shape{cell.batch_heads(), cell.head_dim, cell.head_dim,
                               std::get<std::int64_t>(*cell.options.find("features")), *parse_performer_features(map)};
    const AttentionInputs in = make_attention_inputs(cell, 160, 19);
    DeviceHeads whole(cuda, shape, 7);
    const std::vector<float> all = prefill<bf16>(cuda, shape, in, 0, 160, whole, kTensorCore);
    // Tokens [0, 100) then [100, 160), carrying (S, z, M): 100 is not a chunk or tile boundary.
    DeviceHeads carried(cuda, shape, 7);
    const std::vector<float> head = prefill<bf16>(cuda, shape, in, 0, 100, carried, kTensorCore);
    const std::vector<float> tail = prefill<bf16>(cuda, shape, in, 100, 60, carried, kTensorCore);
    EXPECT_LT(testing::relative_max_error(testing::join_rows(head, 100, tail, 60, in.batch_heads, in.dim), all), 1e-2)
        << map;
    EXPECT_LT(testing::relative_max_error(carried.all_state(cuda), whole.all_state(cuda)), 1e-5) << map;
  }
}

// A tensor-core plan takes bf16 storage and the split W; anything else is refused before a launch
// (runs without a device: nothing is enqueued).
TEST(PerformerGpu, TensorCorePlanRefusesFp32StorageAndAMissingSplit) {
  const PerformerShape shape{2, 64, 64, 128, PerformerFeatures::favor_plus};
  const PerformerPrefillPlan plan = plan_performer_prefill(shape, 64, PerformerPrefillPath::tensor_core_bf16);
  const bf16 split{};
  EXPECT_THROW(launch_performer_prefill<float>(plan, nullptr, &split, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_performer_prefill<bf16>(plan, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                              nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
}

TEST(PerformerGpu, Bf16PrefillCellsNameTheirTensorCorePath) {
  ARCH_BENCH_CUDA_BACKEND_OR_SKIP(backend);
  for (const Phase phase : {Phase::prefill, Phase::decode}) {
    const Cell cell = performer_cell(phase, 65, DType::bfloat16, "favor+");
    auto prepared = find_mechanism("performer")->prepare(cell, 3, *backend);
    const auto* named = dynamic_cast<const NamesGpuKernel*>(prepared.get());
    ASSERT_NE(named, nullptr);
    EXPECT_EQ(named->gpu_kernel(), performer_gpu_kernel_name(cell));
    prepared->run();
    testing::expect_within_fp64_reference(prepared->check(), DType::bfloat16, phase_name(phase));
  }
}

#endif  // ARCH_BENCH_HAVE_CUDA

}  // namespace
}  // namespace arch_bench
