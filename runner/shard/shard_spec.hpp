#pragma once
// `--shard I/N` and `--shard auto`: which part of the plan one process measures. Shard I of N holds
// the cells that split_by_cost() puts into bin I; N processes with I = 0..N-1 measure the whole plan
// once between them, and `arch-bench merge` joins their reports.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace arch_bench {

struct ShardSpec {
  std::int64_t index = 0;  // I, 0 <= I < N
  std::int64_t count = 1;  // N >= 1
  // "command_line" for I/N, "slurm" for auto (read from the job array's variables).
  std::string source = "command_line";
};

// Reads one environment variable (nullopt when unset); std::getenv in the program, a map in tests.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvironmentLookup process_environment();

// Parses the value of --shard. "I/N" takes decimal whole numbers; "auto" takes Slurm's job-array
// variables: I = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP (MIN 0 and
// STEP 1 when unset), N = SLURM_ARRAY_TASK_COUNT, so `sbatch --array=1-4` or `--array=0-6:2` number
// their shards 0..N-1 too. Throws UsageError naming --shard (and the variable) for anything else:
// I >= N, N = 0, words that are not numbers, auto outside a job array, an array with gaps.
ShardSpec parse_shard(const std::string& text, const EnvironmentLookup& environment);

}  // namespace arch_bench
