// Machine ceilings and host facts: properties that hold on any host (positive, finite, sane order
// of magnitude, every key present), never a speed threshold.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "build_info.hpp"
#include "core/backends/cpu/host_facts.hpp"
#include "core/stop_request.hpp"
#include "runner/measure/ceilings.hpp"

namespace arch_bench {
namespace {

class CeilingsMeasured : public ::testing::Test {
 protected:
  // Measured once for the suite: about a second of streaming over arrays beyond the LLC.
  static void SetUpTestSuite() { measured_ = std::make_unique<Ceilings>(measure_ceilings(1)); }
  static void TearDownTestSuite() { measured_.reset(); }
  static const Ceilings& measured() { return *measured_; }

 private:
  static inline std::unique_ptr<Ceilings> measured_;
};

TEST_F(CeilingsMeasured, RatesArePositiveAndFinite) {
  for (double rate : {measured().memory_read_gbps, measured().memory_triad_gbps,
                      measured().peak_gflops}) {
    EXPECT_TRUE(std::isfinite(rate));
    EXPECT_GT(rate, 0.0);
  }
}

TEST_F(CeilingsMeasured, BandwidthIsInAPhysicallySaneRange) {
  // Below 0.1 GB/s the read was optimised away or never ran; above 10 TB/s it came from cache.
  EXPECT_GT(measured().memory_read_gbps, 0.1);
  EXPECT_LT(measured().memory_read_gbps, 10000.0);
  EXPECT_GT(measured().memory_triad_gbps, 0.1);
  EXPECT_LT(measured().memory_triad_gbps, 10000.0);
}

TEST_F(CeilingsMeasured, RecordsThreadsAndMethod) {
  EXPECT_EQ(measured().threads, 1);
  EXPECT_FALSE(measured().method.empty());
  EXPECT_EQ(measured().method.find('\n'), std::string::npos);  // one line
}

// The read ceiling walks its slice as several streams in lockstep plus a tail: every element must be
// read once, whatever the slice's offset and whether its granules divide into the streams. Element
// i holds i + 1 (exact in fp32 at these sizes), so a skipped or doubled element changes the sum.
TEST(CeilingsReadProbe, ReadsEveryElementOfTheSliceOnce) {
  const std::size_t granule = read_granule_floats();
  std::vector<float> data(granule * 40);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i + 1);
  for (std::size_t first : {0, 1, 3}) {
    for (std::size_t granules : {0, 1, 3, 4, 5, 7, 16, 37}) {
      const std::size_t begin = first * granule, end = begin + granules * granule;
      double expected = 0;
      for (std::size_t i = begin; i < end; ++i) expected += data[i];
      EXPECT_EQ(static_cast<double>(streaming_read_sum(data.data(), begin, end)), expected)
          << "granules " << first << " to " << first + granules;
    }
  }
}

// The second reading of a long CPU run: each ceiling is the better of the two readings (the
// first here read the FMA peak at half, as a stolen vCPU makes it), and both are kept.
TEST(CeilingsSecondReading, EachCeilingIsTheBetterReadingAndBothAreKept) {
  const Ceilings before{22.0, 19.0, 39.6, 2, "m", {}, {}, {}};
  const Ceilings after{20.5, 19.5, 79.4, 2, "m", {}, {}, {}};
  const Ceilings best = with_second_reading(before, after);
  EXPECT_DOUBLE_EQ(best.memory_read_gbps, 22.0);
  EXPECT_DOUBLE_EQ(best.memory_triad_gbps, 19.5);
  EXPECT_DOUBLE_EQ(best.peak_gflops, 79.4);
  EXPECT_EQ(best.threads, 2);
  ASSERT_EQ(best.readings.size(), 2u);
  EXPECT_EQ(best.readings[0].when, "before_cells");
  EXPECT_DOUBLE_EQ(best.readings[0].peak_gflops, 39.6);
  EXPECT_EQ(best.readings[1].when, "after_cells");
  EXPECT_DOUBLE_EQ(best.readings[1].memory_read_gbps, 20.5);
  EXPECT_NE(best.method.find("after"), std::string::npos);
}

TEST(CeilingsSecondReading, TakenByLongUninterruptedCpuRunsOnly) {
  EXPECT_TRUE(wants_second_ceiling_reading(false, false, kSecondCeilingReadingAfterSeconds));
  EXPECT_TRUE(wants_second_ceiling_reading(false, false, 600.0));
  EXPECT_FALSE(wants_second_ceiling_reading(false, false, kSecondCeilingReadingAfterSeconds / 2));
  EXPECT_FALSE(wants_second_ceiling_reading(true, false, 600.0));   // GPU ceilings are the device's
  EXPECT_FALSE(wants_second_ceiling_reading(false, true, 600.0));   // interrupted: write and go
}

TEST_F(CeilingsMeasured, AFullReadingTakesEveryPass) {
  EXPECT_EQ(measured().method.find("cut short"), std::string::npos) << measured().method;
  EXPECT_NE(measured().method.find("best of 5"), std::string::npos) << measured().method;
}

// A stop request during the ceilings phase (issue 42) ends each probe after one pass: the reading is
// still a measurement (positive, finite), and its method says it was cut short.
TEST(CeilingsStopped, AStopRequestCutsEveryProbeToOnePass) {
  request_stop(15);
  const Ceilings stopped = measure_ceilings(1);
  clear_stop_request();
  for (double rate : {stopped.memory_read_gbps, stopped.memory_triad_gbps, stopped.peak_gflops}) {
    EXPECT_TRUE(std::isfinite(rate));
    EXPECT_GT(rate, 0.0);
  }
  EXPECT_NE(stopped.method.find("cut short by a stop request"), std::string::npos) << stopped.method;
  EXPECT_EQ(stopped.method.find("best of 5"), std::string::npos) << stopped.method;
  EXPECT_NE(stopped.method.find("best of 1"), std::string::npos) << stopped.method;
}

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

TEST(CeilingsStreamArrays, SmallCachesGetFourTimesTheirSizeAboveTheFloor) {
  EXPECT_EQ(stream_array_bytes(32 * kMiB, 64 * kGiB), 128 * kMiB);  // 4 x 32 MiB is the floor
  EXPECT_EQ(stream_array_bytes(96 * kMiB, 64 * kGiB), 384 * kMiB);
  EXPECT_EQ(stream_array_bytes(0, 64 * kGiB), 128 * kMiB);  // unknown LLC: the floor
}

TEST(CeilingsStreamArrays, LargeCachesAreCappedButTheSweepStaysThreeTimesTheCache) {
  for (const std::int64_t llc : {160 * kMiB, 480 * kMiB, 1 * kGiB, 2 * kGiB}) {
    const std::int64_t bytes = stream_array_bytes(llc, 256 * kGiB);
    EXPECT_LE(bytes, std::max(512 * kMiB, llc)) << llc;
    EXPECT_GE(3 * bytes, 3 * llc) << llc;  // every array at least one LLC
  }
  EXPECT_EQ(stream_array_bytes(480 * kMiB, 256 * kGiB), 512 * kMiB);
  EXPECT_EQ(stream_array_bytes(2 * kGiB, 256 * kGiB), 2 * kGiB);
}

TEST(CeilingsStreamArrays, TheThreeArraysTakeAtMostAQuarterOfMemoryAboveTheFloor) {
  EXPECT_EQ(stream_array_bytes(480 * kMiB, 4 * kGiB), 4 * kGiB / 12);
  EXPECT_EQ(stream_array_bytes(480 * kMiB, 1 * kGiB), 128 * kMiB);  // never below the floor
  EXPECT_EQ(stream_array_bytes(480 * kMiB, 0), 512 * kMiB);         // unknown memory: no cap
}

TEST(CeilingsArguments, RejectsZeroThreads) {
  EXPECT_THROW(measure_ceilings(0), std::invalid_argument);
}

TEST(HostFacts, HasEveryKeyWithItsType) {
  const nlohmann::json facts = host_facts();
  ASSERT_TRUE(facts.is_object());
  EXPECT_TRUE(facts.at("cpu_model").is_string());
  EXPECT_FALSE(facts.at("cpu_model").get<std::string>().empty());
  EXPECT_GE(facts.at("logical_cores").get<std::int64_t>(), 1);
  const nlohmann::json& caches = facts.at("caches");
  for (const char* key : {"l1d_bytes", "l2_bytes", "l3_bytes"}) {
    ASSERT_TRUE(caches.contains(key)) << key;
    EXPECT_TRUE(caches.at(key).is_null() || caches.at(key).get<std::int64_t>() > 0) << key;
  }
  EXPECT_GT(facts.at("memory_bytes").get<std::int64_t>(), 0);
  EXPECT_TRUE(facts.at("os").is_string());
  EXPECT_TRUE(facts.at("frequency_governor").is_string() || facts.at("frequency_governor").is_null());
  EXPECT_TRUE(facts.at("hypervisor").is_boolean());
}

TEST(HostFacts, CarriesTheBuildInfo) {
  const nlohmann::json facts = host_facts();
  EXPECT_EQ(facts.at("compiler"), build_info::cxx_compiler);
  EXPECT_EQ(facts.at("build_type"), build_info::build_type);
  EXPECT_EQ(facts.at("git_commit"), build_info::git_commit);
  EXPECT_EQ(facts.at("tool_version"), build_info::tool_version);
}

// The stream arrays' memory cap and the report read the host's memory from one place.
TEST(HostFacts, MemoryBytesIsTheHostMemoryTheCeilingsAreCappedBy) {
  EXPECT_GT(host_memory_bytes(), 0);
  EXPECT_EQ(host_facts().at("memory_bytes").get<std::int64_t>(), host_memory_bytes());
}

TEST(HostFacts, LastLevelCacheIsTheLargestReportedLevel) {
  const nlohmann::json caches = host_facts().at("caches");
  std::int64_t largest = 0;
  for (const auto& [key, value] : caches.items()) {
    if (!value.is_null()) largest = std::max(largest, value.get<std::int64_t>());
  }
  EXPECT_EQ(last_level_cache_bytes(), largest);
}

TEST(HostFacts, PeakRssIsPositiveAndCoversTouchedMemory) {
  EXPECT_GT(process_peak_rss_bytes(), 0);
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);  // resident only once touched
  EXPECT_GE(process_peak_rss_bytes(), static_cast<std::int64_t>(kBytes));
  EXPECT_EQ(block[kBytes - 1], 1);
}

}  // namespace
}  // namespace arch_bench
