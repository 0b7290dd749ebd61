// Grouped-query and multi-query attention in softmax_kv (--kv-heads): every kernel set against the fp64
// reference at kv_heads 1, 2, 4 and 8 of 8 query heads, decode against prefill, a group against
// multi-head attention on replicated K/V, the sizes that follow kv_heads, and the refusals.
#include <filesystem>

#include <gtest/gtest.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/kv_heads_option.hpp"
#include "mechanisms/registry.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "runner/conformance/npy_files.hpp"
#include "support/attention_fixtures.hpp"
#include "support/cli.hpp"
#include "support/mechanism_fixtures.hpp"
#include "support/cli_refusals.hpp"

namespace arch_bench::testing {
namespace {

constexpr std::int64_t kQueryHeads = 8;

// Decode at `length` with K/V heads of `group` query heads each (splits forced when given).
template <class T>
std::vector<float> grouped_decode(const AttentionInputs& in, std::int64_t group, std::int64_t length, int threads,
                                  CpuIsa isa = cpu_isa(), std::int64_t splits = 0) {
  const std::int64_t bh = in.batch_heads, kv = bh / group, d = in.dim, capacity = length + 1;
  SoftmaxDecodePlan plan = plan_softmax_decode(bh, d, capacity, capacity, threads, group);
  plan.isa = isa;
  if (splits > 0) plan.splits = splits;
  std::vector<T> k_cache(kv * capacity * d), v_cache(k_cache.size()), q(bh * d), k_new(kv * d), v_new(kv * d),
      out(bh * d);
  store_kv_heads(in, in.k, group, length, capacity, k_cache.data());
  store_kv_heads(in, in.v, group, length, capacity, v_cache.data());
  store_kv_token(in, in.k, group, length, k_new.data());
  store_kv_token(in, in.v, group, length, v_new.data());
  for (std::int64_t h = 0; h < bh; ++h) store(in.q_at(h, length), d, q.data() + h * d);
  std::vector<float> workspace(plan.workspace_floats());
  softmax_decode_step(plan, q.data(), k_new.data(), v_new.data(), k_cache.data(), v_cache.data(), length,
                      workspace.data(), out.data());
  return testing::to_floats(out);
}

// 64: the AVX-512 split kernel; 80: AVX2's (a multiple of 16, not of 32); 36: the portable one. Lengths
// 0 (the new token alone), off the 64-row block, and long enough to split over two threads.
TEST(GroupedQueryAttention, DecodeMatchesFp64ReferenceAtEveryGroupAndKernelSet) {
  for (CpuIsa isa : runnable_isas()) {
    for (std::int64_t kv_heads : {1, 2, 4, 8}) {
      const std::int64_t group = kQueryHeads / kv_heads;
      for (std::int64_t dim : {36, 64, 80}) {
        for (std::int64_t length : {0, 5, 333, 1100}) {
          const Cell f32_cell = small_cell(kQueryHeads, dim, length, DType::float32);
          const AttentionInputs f32 = make_attention_inputs(f32_cell, length + 1, 31);
          EXPECT_LT(relative_max_error(grouped_decode<float>(f32, group, length, 2, isa),
                                       attention_reference_row(f32, group, 0, length)),
                    1e-5)
              << cpu_isa_name(isa) << " kv_heads " << kv_heads << " dim " << dim << " L " << length;
          const Cell b16_cell = small_cell(kQueryHeads, dim, length, DType::bfloat16);
          const AttentionInputs b16 = make_attention_inputs(b16_cell, length + 1, 32);
          EXPECT_LT(relative_max_error(grouped_decode<bf16>(b16, group, length, 2, isa),
                                       attention_reference_row(b16, group, 0, length)),
                    dtype_tolerance(DType::bfloat16))
              << cpu_isa_name(isa) << " bf16 kv_heads " << kv_heads << " dim " << dim << " L " << length;
        }
      }
    }
  }
}

TEST(GroupedQueryAttention, PrefillMatchesFp64ReferenceAtEveryGroupAndKernelSet) {
  for (CpuIsa isa : runnable_isas()) {
    for (std::int64_t kv_heads : {1, 2, 4}) {
      const std::int64_t group = kQueryHeads / kv_heads;
      for (std::int64_t dim : {33, 64}) {
        for (std::int64_t tokens : {1, 65, 130}) {
          const AttentionInputs f32 = make_attention_inputs(small_cell(kQueryHeads, dim, 0, DType::float32), tokens, 33);
          EXPECT_LT(relative_max_error(attention_prefill<float>(f32, group, 0, isa), attention_reference(f32, group, 0)), 1e-5)
              << cpu_isa_name(isa) << " kv_heads " << kv_heads << " dim " << dim << " tokens " << tokens;
          const AttentionInputs b16 = make_attention_inputs(small_cell(kQueryHeads, dim, 0, DType::bfloat16), tokens, 34);
          EXPECT_LT(relative_max_error(attention_prefill<bf16>(b16, group, 0, isa), attention_reference(b16, group, 0)),
                    dtype_tolerance(DType::bfloat16))
              << cpu_isa_name(isa) << " bf16 kv_heads " << kv_heads << " dim " << dim << " tokens " << tokens;
        }
      }
    }
  }
}

TEST(GroupedQueryAttention, DecodeAtLEqualsLastRowOfPrefill) {
  const std::int64_t length = 700;
  for (std::int64_t group : {2, 8}) {
    const AttentionInputs in = make_attention_inputs(small_cell(kQueryHeads, 64, length, DType::float32), length + 1, 35);
    EXPECT_LT(relative_max_error(grouped_decode<float>(in, group, length, 2),
                                 row_of_every_head(attention_prefill<float>(in, group, 0), in, length)),
              1e-5)
        << "group " << group;
  }
}

// A group is multi-head attention whose heads of one group hold the same K/V: with the same splits
// the kernels do the same arithmetic per query, so the outputs agree bit for bit.
TEST(GroupedQueryAttention, GroupEqualsMultiHeadOnReplicatedKvBitForBit) {
  const std::int64_t length = 600;
  for (CpuIsa isa : runnable_isas()) {
    for (std::int64_t group : {2, 4, 8}) {
      AttentionInputs in = make_attention_inputs(small_cell(kQueryHeads, 64, length, DType::bfloat16), length + 1, 36);
      AttentionInputs replicated = in;
      for (std::int64_t h = 0; h < in.batch_heads; ++h) {
        const std::int64_t source = kv_source_head(h, group);
        std::copy(in.k_at(source, 0), in.k_at(source, 0) + in.tokens * in.dim, replicated.k.begin() + h * in.tokens * in.dim);
        std::copy(in.v_at(source, 0), in.v_at(source, 0) + in.tokens * in.dim, replicated.v.begin() + h * in.tokens * in.dim);
      }
      EXPECT_EQ(grouped_decode<bf16>(in, group, length, 2, isa, 2), grouped_decode<bf16>(replicated, 1, length, 2, isa, 2))
          << cpu_isa_name(isa) << " group " << group;
      EXPECT_EQ(attention_prefill<bf16>(in, group, 0, isa), attention_prefill<bf16>(replicated, 1, 0, isa))
          << cpu_isa_name(isa) << " group " << group;
    }
  }
}

// The group's queries share each K/V head's work item: fewer items, so the context splits further.
TEST(GroupedQueryAttention, DecodePlanSplitsPerKvHead) {
  const SoftmaxDecodePlan mha = plan_softmax_decode(8, 64, 8193, 8193, 16, 1);
  const SoftmaxDecodePlan mqa = plan_softmax_decode(8, 64, 8193, 8193, 16, 8);
  EXPECT_EQ(mqa.batch_kv_heads(), 1);
  EXPECT_EQ(mha.splits, 4);   // 8 heads x 4 splits = 32 items for 16 threads
  EXPECT_EQ(mqa.splits, 32);  // 1 K/V head x 32 splits
  EXPECT_EQ(mqa.workspace_floats(), 8 * 32 * 66);  // one partial per query head and split
}

Cell softmax_cell(std::int64_t kv_heads, Phase phase, DType dtype = DType::bfloat16, std::int64_t length = 8192) {
  Cell cell = small_cell(kQueryHeads, 64, length, dtype, phase);
  cell.mechanism = "softmax_kv";
  if (kv_heads >= 0) cell.options.set("kv_heads", kv_heads);
  return cell;
}

TEST(GroupedQueryAttention, StateBytesAndCostFollowKvHeads) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  ASSERT_NE(softmax, nullptr);
  // The seed figure: 16 MiB at L = 8192 with 8 K/V heads (kv_heads 0 and 8 are the same cell).
  EXPECT_EQ(softmax->state_bytes(softmax_cell(-1, Phase::decode)), 16 << 20);
  EXPECT_EQ(softmax->state_bytes(softmax_cell(0, Phase::decode)), 16 << 20);
  EXPECT_EQ(softmax->state_bytes(softmax_cell(8, Phase::decode)), 16 << 20);
  EXPECT_EQ(softmax->state_bytes(softmax_cell(2, Phase::decode)), 4 << 20);
  EXPECT_EQ(softmax->state_bytes(softmax_cell(1, Phase::decode)), 2 << 20);
  const Cost mha = softmax->cost(softmax_cell(0, Phase::decode));
  const Cost mqa = softmax->cost(softmax_cell(1, Phase::decode));
  EXPECT_EQ(mha.bytes_moved, 8.0 * 64 * 2 * (2 * 8193 + 4));                // unchanged multi-head figure
  EXPECT_EQ(mqa.bytes_moved, 64.0 * 2 * (1 * (2 * 8193 + 2) + 2 * 8));      // one cache, 8 queries and outputs
  EXPECT_EQ(mqa.flops, mha.flops);                                          // the work is per query head
  EXPECT_LT(softmax->predicted_peak_bytes(softmax_cell(2, Phase::decode)),
            softmax->predicted_peak_bytes(softmax_cell(8, Phase::decode)));
  EXPECT_EQ(softmax->cost(softmax_cell(8, Phase::prefill)).bytes_moved,
            softmax->cost(softmax_cell(0, Phase::prefill)).bytes_moved);
}

TEST(GroupedQueryAttention, PreparedCellsPassTheirChecksAndDefaultIsMultiHead) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  CpuBackend backend;
  for (DType dtype : {DType::float32, DType::bfloat16}) {
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      for (std::int64_t kv_heads : {1, 2, 4}) {
        auto prepared = softmax->prepare(softmax_cell(kv_heads, phase, dtype, 300), 11, backend);
        prepared->run();
        const Accuracy accuracy = prepared->check();
        EXPECT_TRUE(accuracy.output_finite);
        EXPECT_LT(accuracy.max_rel_error, dtype_tolerance(dtype)) << dtype_name(dtype) << " " << phase_name(phase);
      }
      // kv_heads = heads is the multi-head cell the default runs: the same error, to the bit.
      auto mha = softmax->prepare(softmax_cell(-1, phase, dtype, 300), 11, backend);
      auto explicit_mha = softmax->prepare(softmax_cell(kQueryHeads, phase, dtype, 300), 11, backend);
      mha->run();
      explicit_mha->run();
      EXPECT_EQ(mha->check().max_abs_error, explicit_mha->check().max_abs_error);
    }
  }
}

TEST(GroupedQueryAttention, KvHeadsThatDoNotDivideTheQueryHeadsAreRefused) {
  const Mechanism* softmax = find_mechanism("softmax_kv");
  const auto why = softmax->unsupported(softmax_cell(3, Phase::decode));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("--kv-heads 3 does not divide --query-heads 8"), std::string::npos) << *why;
  EXPECT_FALSE(softmax->unsupported(softmax_cell(4, Phase::decode)).has_value());
  // The CUDA kernels take the grouping too (tests/gpu/test_softmax_kv_gpu.cpp): not refused there.
  EXPECT_FALSE(softmax->unsupported_on(softmax_cell(2, Phase::decode), "cuda").has_value());

  testing::expect_run_refused("--mode linear_recurrence --kv-heads 3 --sequence-lengths 16 --quiet",
                              "does not divide --query-heads 8");
  testing::expect_run_refused("--mode linear_recurrence --kv-heads -1 --sequence-lengths 16 --quiet", "");
}

// A list runs the baseline once per value, each row recording its kv_heads and state.
TEST(GroupedQueryAttention, RunTakesAListOfKvHeads) {
  testing::TempFolder folder;
  const auto result = testing::run_cli("run --mode linear_recurrence --kv-heads 8,2 --sequence-lengths 64 "
                                       "--phase decode --warmup 0 --repeats 2 --threads 1 --quiet --results-dir '" +
                                       folder.path().string() + "' --run-label t");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = testing::read_json(folder / "45_linear_recurrent_state_t.json");
  std::map<std::int64_t, std::int64_t> state_by_kv_heads;
  for (const auto& row : report["metrics"]["rows"]) {
    if (row["mechanism"] != "softmax_kv") continue;
    EXPECT_EQ(row["variant"], "kv_heads=" + std::to_string(row["options"]["kv_heads"].get<std::int64_t>()));
    state_by_kv_heads[row["options"]["kv_heads"].get<std::int64_t>()] = row["state_bytes"].get<std::int64_t>();
    EXPECT_TRUE(row["within_tolerance"].get<bool>());
  }
  ASSERT_EQ(state_by_kv_heads.size(), 2u);
  EXPECT_EQ(state_by_kv_heads[8], 4 * state_by_kv_heads[2]);
  EXPECT_EQ(report["workload"]["kv_heads"], nlohmann::json::array({8, 2}));
}

// conformance: --generate --kv-heads writes k and v with that many heads (each group's first query
// head's draw), a run reads it back from k.npy and passes; a run given --kv-heads is refused.
TEST(GroupedQueryAttention, ConformanceGeneratesAndRunsGroupedFiles) {
  testing::TempFolder folder;
  for (const char* mechanism : {"softmax_kv", "sliding_window"}) {
    const std::filesystem::path in = folder / (std::string(mechanism) + "_in"), out = folder / (std::string(mechanism) + "_out");
    const auto generated = testing::run_cli(std::string("conformance --generate ") + in.string() + " --mechanism " +
                                            mechanism + " --heads 4 --kv-heads 2 --length 70 --dim 16 --seed 3");
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
    const NpyArray q = read_npy(in / "q.npy"), k = read_npy(in / "k.npy");
    EXPECT_EQ(q.shape, (std::vector<std::int64_t>{1, 4, 70, 16}));
    EXPECT_EQ(k.shape, (std::vector<std::int64_t>{1, 2, 70, 16}));
    const std::string window = std::string(mechanism) == "sliding_window" ? " --window 20" : "";
    const auto run = testing::run_cli(std::string("conformance --mechanism ") + mechanism + window + " --inputs " +
                                      in.string() + " --outputs " + out.string());
    EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
    const auto manifest = testing::read_json(out / "conformance.json");
    EXPECT_EQ(manifest["axes"]["kv_heads"], 2) << mechanism;
    const auto refused = testing::run_cli(std::string("conformance --mechanism ") + mechanism + " --kv-heads 2 --inputs " +
                                          in.string() + " --outputs " + (folder / "refused").string());
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
  }
  // K/V head 1 of --kv-heads 2 over 4 query heads is the draw of query head 2.
  const auto full = testing::run_cli("conformance --generate " + (folder / "mha").string() +
                                     " --mechanism softmax_kv --heads 4 --length 70 --dim 16 --seed 3");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const NpyArray k_all = read_npy(folder / "mha" / "k.npy"), k_grouped = read_npy(folder / "softmax_kv_in" / "k.npy");
  const std::size_t per_head = 70 * 16;
  EXPECT_TRUE(std::equal(k_grouped.values.begin() + per_head, k_grouped.values.end(),
                         k_all.values.begin() + 2 * per_head));
  EXPECT_EQ(testing::run_cli("conformance --generate " + (folder / "bad").string() +
                             " --mechanism softmax_kv --heads 4 --kv-heads 3").exit_code,
            2);
}

}  // namespace
}  // namespace arch_bench::testing
