// The build's ISA features and the start-up check that refuses a binary compiled for a CPU with
// more than this one has (mechanisms/common/cpu_isa.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mechanisms/common/cpu_isa.hpp"

namespace arch_bench {
namespace {

bool has(const std::vector<std::string>& features, const std::string& name) {
  return std::find(features.begin(), features.end(), name) != features.end();
}

TEST(CpuIsa, MissingFeaturesAreTheCompiledOnesTheCpuLacksInOrder) {
  const std::vector<std::string> compiled = {"avx", "avx2", "fma", "avx512f", "avx512bw"};
  const auto avx2_machine = [](const std::string& f) { return f == "avx" || f == "avx2" || f == "fma"; };
  EXPECT_EQ(missing_isa_features(compiled, avx2_machine), (std::vector<std::string>{"avx512f", "avx512bw"}));
  EXPECT_TRUE(missing_isa_features(compiled, [](const std::string&) { return true; }).empty());
  EXPECT_EQ(missing_isa_features(compiled, [](const std::string&) { return false; }), compiled);
}

TEST(CpuIsa, TheBuildFeaturesAgreeWithTheBuildIsaName) {
  const std::vector<std::string> features = build_isa_features();
  const std::string isa = build_isa_name();
  if (isa == "avx512") {
    EXPECT_TRUE(has(features, "avx512f"));
  }
  if (isa == "avx2") {
    EXPECT_TRUE(has(features, "avx2") && has(features, "fma"));
  }
  if (isa == "x86-64") {
    EXPECT_FALSE(has(features, "avx"));
  }
}

// The tests run on the machine that built them, so the start-up check must let this binary run.
TEST(CpuIsa, TheMachineThatBuiltTheTestsHasEveryFeatureTheBuildUses) {
  EXPECT_TRUE(build_isa_features_missing_here().empty());
}

}  // namespace
}  // namespace arch_bench
