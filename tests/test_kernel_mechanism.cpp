// KernelMechanism (mechanisms/kernel_mechanism.hpp) and MechanismConformance
// (mechanisms/common/conformance_adapter.hpp): the parts the built-in mechanisms and their adapters
// state once, on a toy mechanism whose parts record which of them ran.
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/errors.hpp"
#include "mechanisms/capacity.hpp"
#include "mechanisms/common/conformance_adapter.hpp"
#include "mechanisms/kernel_mechanism.hpp"
#include "tests/support/mechanism_fixtures.hpp"

namespace arch_bench {
namespace {

// Which prepare ran: the CPU cells or the CUDA cells.
class TaggedCell final : public PreparedCell {
 public:
  explicit TaggedCell(std::string backend) : backend(std::move(backend)) {}
  void run() override {}
  Accuracy check() const override { return {}; }
  std::vector<ByteSpan> buffers() const override { return {}; }
  std::string backend;
};

std::unique_ptr<PreparedCell> prepare_on_cpu(const Cell&, std::uint64_t, Allocator&) {
  return std::make_unique<TaggedCell>("cpu");
}
std::unique_ptr<PreparedCell> prepare_on_cuda(const Cell&, std::uint64_t, Backend&) {
  return std::make_unique<TaggedCell>("cuda");
}
std::optional<std::string> odd_heads_on_cuda(const Cell& cell) {
  if (cell.heads % 2 != 0) return "odd heads";
  return std::nullopt;
}

class ToyConformance final : public MechanismConformance {
 public:
  ToyConformance() : MechanismConformance({"toy", 16, prepare_conformance_on_cuda}) {}
  mutable int runs = 0;

 private:
  static void prepare_conformance_on_cuda(const ConformanceInputs&, DType, ConformanceOutputs&, Backend&) {}
  ConformanceSpec describe(const MechanismOptions&) const override { return {}; }
  ConformanceOutputs run_checked(const ConformanceInputs&, DType, const MechanismOptions&) const override {
    ++runs;
    return {};
  }
};
const ConformanceAdapter& toy_conformance() {
  static const ToyConformance adapter;
  return adapter;
}

class ToyProbe final : public CapacityProbe {
 public:
  MatrixD recall(const MatrixD& keys, const MatrixD&) const override { return keys; }
};
const CapacityProbe& toy_capacity() {
  static const ToyProbe probe;
  return probe;
}

class Toy final : public KernelMechanism {
 public:
  explicit Toy(KernelMechanismParts parts) : KernelMechanism(std::move(parts)) {}
  std::int64_t state_bytes(const Cell&) const override { return 1; }
  std::int64_t predicted_peak_bytes(const Cell&) const override { return 1; }
  Cost cost(const Cell&) const override { return {}; }
};

KernelMechanismParts toy_parts() {
  return {.id = "toy",
          .title = "a toy",
          .state_kind = StateKind::explicit_history,
          .max_head_dim = 64,
          .cuda_unsupported = odd_heads_on_cuda,
          .prepare_cuda = prepare_on_cuda,
          .prepare_cpu = prepare_on_cpu,
          .conformance = toy_conformance,
          .capacity = toy_capacity};
}

// A backend that calls itself "cuda" but holds host memory: prepare must hand the CUDA part the cell.
class NamedCudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  Allocator& allocator() override { return allocator_; }
  double time_ms(const std::function<void()>&) override { return 0; }
  void evict(std::span<const ByteSpan>) override {}
  nlohmann::json facts() const override { return {}; }

 private:
  HostAllocator allocator_;
};

Cell toy_cell(std::int64_t heads, std::int64_t dim) {
  return testing::mechanism_cell("toy", heads, dim, 4, DType::float32);
}

TEST(KernelMechanism, StatesItsInfoWithThisBuildsBackends) {
  const Toy toy(toy_parts());
  EXPECT_EQ(toy.info().id, "toy");
  EXPECT_EQ(toy.info().title, "a toy");
  EXPECT_EQ(toy.info().state_kind, StateKind::explicit_history);
  EXPECT_EQ(toy.info().backends, cpu_and_cuda_backends());
}

TEST(KernelMechanism, RefusesHeadsWiderThanItsBoundAndNamesIt) {
  const Toy toy(toy_parts());
  EXPECT_EQ(toy.unsupported(toy_cell(2, 64)), std::nullopt);
  EXPECT_EQ(toy.unsupported(toy_cell(2, 65)), "toy takes head_dim up to 64");
  KernelMechanismParts unbounded = toy_parts();
  unbounded.max_head_dim = 0;
  EXPECT_EQ(Toy(unbounded).unsupported(toy_cell(2, 1 << 20)), std::nullopt);
}

TEST(KernelMechanism, AsksTheCudaLimitsOnlyForTheCudaBackend) {
  const Toy toy(toy_parts());
  EXPECT_EQ(toy.unsupported_on(toy_cell(3, 8), "cuda"), "odd heads");
  EXPECT_EQ(toy.unsupported_on(toy_cell(3, 8), "cpu"), std::nullopt);
  EXPECT_EQ(toy.unsupported_on(toy_cell(2, 8), "cuda"), std::nullopt);
  KernelMechanismParts cpu_only = toy_parts();
  cpu_only.cuda_unsupported = nullptr;
  EXPECT_EQ(Toy(cpu_only).unsupported_on(toy_cell(3, 8), "cuda"), std::nullopt);
}

TEST(KernelMechanism, PreparesTheCellsOfTheBackendItIsGiven) {
  const Toy toy(toy_parts());
  CpuBackend cpu;
  NamedCudaBackend cuda;
  const auto on_cpu = toy.prepare(toy_cell(2, 8), 1, cpu);
  const auto on_cuda = toy.prepare(toy_cell(2, 8), 1, cuda);
  EXPECT_EQ(dynamic_cast<const TaggedCell&>(*on_cpu).backend, "cpu");
  EXPECT_EQ(dynamic_cast<const TaggedCell&>(*on_cuda).backend, "cuda");
  // Without CUDA cells (a build without CUDA), the CPU cells serve whatever the backend.
  KernelMechanismParts cpu_only = toy_parts();
  cpu_only.prepare_cuda = nullptr;
  EXPECT_EQ(dynamic_cast<const TaggedCell&>(*Toy(cpu_only).prepare(toy_cell(2, 8), 1, cuda)).backend, "cpu");
}

TEST(KernelMechanism, HandsOutItsConformanceAndProbeOrNone) {
  const Toy toy(toy_parts());
  EXPECT_EQ(toy.conformance(), &toy_conformance());
  EXPECT_EQ(toy.capacity_probe({}), &toy_capacity());
  KernelMechanismParts bare = toy_parts();
  bare.conformance = nullptr;
  bare.capacity = nullptr;
  EXPECT_EQ(Toy(bare).conformance(), nullptr);
  EXPECT_EQ(Toy(bare).capacity_probe({}), nullptr);
}

ConformanceInputs toy_inputs(std::int64_t dim, std::int64_t dv) { return {{{"dim", dim}, {"dv", dv}}, {}}; }

TEST(MechanismConformance, ChecksOptionsAndAxesBeforeItRuns) {
  const auto& adapter = dynamic_cast<const ToyConformance&>(toy_conformance());
  const int before = adapter.runs;
  adapter.run(toy_inputs(16, 16), DType::float32, {});
  EXPECT_EQ(adapter.runs, before + 1);
  EXPECT_THROW(adapter.run(toy_inputs(17, 16), DType::float32, {}), UsageError);
  EXPECT_THROW(adapter.run(toy_inputs(16, 17), DType::float32, {}), UsageError);
  MechanismOptions foreign;
  foreign.set("window", std::int64_t{8});  // sliding_window's, not the toy's
  EXPECT_THROW(adapter.spec(foreign), UsageError);
  EXPECT_THROW(adapter.run(toy_inputs(16, 16), DType::float32, foreign), UsageError);
  EXPECT_THROW(adapter.generate({}, foreign, 1, DType::float32), UsageError);
  EXPECT_EQ(adapter.runs, before + 1);  // nothing refused reached run_checked
}

TEST(MechanismConformance, DrawsQkvByDefaultAndNamesItsGpuRun) {
  const ConformanceAdapter& adapter = toy_conformance();
  const ConformanceShape shape{.batch = 1, .heads = 2, .length = 3, .dim = 4};
  const auto drawn = adapter.generate(shape, {}, 7, DType::float32);
  const auto expected = generate_attention_inputs(shape, {}, 7, DType::float32);
  ASSERT_EQ(drawn.size(), expected.size());
  for (const auto& [name, array] : expected) EXPECT_EQ(drawn.at(name).values, array.values) << name;
  EXPECT_NE(adapter.cuda_kernels(), nullptr);
}

}  // namespace
}  // namespace arch_bench
