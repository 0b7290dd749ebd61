#include "runner/shard/shard_spec.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace {
// Far more shards than any array a scheduler accepts (Slurm's MaxArraySize is at most 4,000,001),
// small enough that no arithmetic on it overflows.
constexpr std::int64_t kMaxShards = 1'000'000'000;

// A decimal whole number, digits only (no sign, no spaces, no 0x), at most kMaxShards.
std::optional<std::int64_t> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const std::int64_t value = std::strtoll(text.c_str(), nullptr, 10);
  if (value > kMaxShards) return std::nullopt;
  return value;
}

ShardSpec checked(std::int64_t index, std::int64_t count, const std::string& what, const std::string& source) {
  if (count == 0) throw UsageError(fmt::format("--shard {}: the shard count N must be at least 1", what));
  if (index >= count) {
    throw UsageError(fmt::format("--shard {}: the shard index must be below the count (0 <= I < N, here I={} and "
                                 "N={})",
                                 what, index, count));
  }
  return ShardSpec{index, count, source};
}

std::int64_t slurm_number(const EnvironmentLookup& environment, const std::string& name,
                          std::optional<std::int64_t> fallback) {
  const std::optional<std::string> value = environment(name);
  if (!value || value->empty()) {
    if (fallback) return *fallback;
    throw UsageError(fmt::format("--shard auto: {} is not set; run it as a task of a Slurm job array (sbatch "
                                 "--array=0-<N-1>, see scripts/slurm/arch-bench.sbatch) or give --shard I/N",
                                 name));
  }
  const std::optional<std::int64_t> number = whole_number(*value);
  if (!number) {
    throw UsageError(fmt::format("--shard auto: {}='{}' is not a whole number", name,
                                 value->size() > 40 ? value->substr(0, 40) + "..." : *value));
  }
  return *number;
}
}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

ShardSpec parse_shard(const std::string& text, const EnvironmentLookup& environment) {
  if (text == "auto") {
    const std::int64_t id = slurm_number(environment, "SLURM_ARRAY_TASK_ID", std::nullopt);
    const std::int64_t count = slurm_number(environment, "SLURM_ARRAY_TASK_COUNT", std::nullopt);
    const std::int64_t min = slurm_number(environment, "SLURM_ARRAY_TASK_MIN", 0);
    const std::int64_t step = slurm_number(environment, "SLURM_ARRAY_TASK_STEP", 1);
    const std::string what =
        fmt::format("auto (SLURM_ARRAY_TASK_ID={}, SLURM_ARRAY_TASK_MIN={}, SLURM_ARRAY_TASK_STEP={}, "
                    "SLURM_ARRAY_TASK_COUNT={})",
                    id, min, step, count);
    // An array such as --array=1,4,9 has gaps: its task ids cannot be numbered 0..N-1 by arithmetic.
    if (step == 0 || id < min || (id - min) % step != 0) {
      throw UsageError(fmt::format("--shard {}: the task ids are not min + k*step; submit a contiguous array "
                                   "(--array=0-<N-1>) or give --shard I/N",
                                   what));
    }
    const std::int64_t index = (id - min) / step;
    if (index >= count && count > 0) {
      throw UsageError(fmt::format("--shard {}: task {} is shard {} but the array has only {} tasks; submit a "
                                   "contiguous array (--array=0-<N-1>) or give --shard I/N",
                                   what, id, index, count));
    }
    return checked(index, count, what, "slurm");
  }
  const auto slash = text.find('/');
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  if (slash == std::string::npos) {
    throw UsageError(fmt::format("--shard '{}': give I/N (shard I of N, 0 <= I < N, e.g. 0/4) or auto", shown));
  }
  const std::optional<std::int64_t> index = whole_number(text.substr(0, slash));
  const std::optional<std::int64_t> count = whole_number(text.substr(slash + 1));
  if (!index || !count) {
    throw UsageError(fmt::format("--shard '{}': I and N must be whole numbers from 0 to {} (e.g. 0/4), or give "
                                 "auto",
                                 shown, kMaxShards));
  }
  return checked(*index, *count, "'" + text + "'", "command_line");
}

}  // namespace arch_bench
