#pragma once
// One shard of a plan (`run --shard I/N`): which cells it holds, the `shard` block its report
// carries, and how its decision is reported. A shard alone cannot decide over the whole matrix (a
// crossover needs every length, a "fixed state" every arm), so its verdict is `inconclusive`,
// "partial matrix: merge the shards"; the mode's rule applied to the shard's own rows is kept in
// decision.details.partial_matrix for a reader, and `arch-bench merge` decides over the union.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/run_result.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/shard/shard_spec.hpp"

namespace arch_bench {

struct ShardSelection {
  ShardSpec spec;
  std::string plan_hash;             // of the full plan (plan_hash.hpp)
  std::size_t plan_cells = 0;        // cells of the full plan
  std::vector<std::size_t> plan_indices;  // the cells held, as indices into the full plan, in plan order
  std::vector<std::int64_t> cost_us;      // predicted cost of each held cell (cost_model.hpp)
  std::int64_t shard_cost_us = 0, plan_cost_us = 0;
  Plan plan;                         // the held cells, in plan order: what this process measures
};

// Splits `full` by predicted cost and keeps shard spec.index. Throws UsageError naming --shard
// when N exceeds the plan's cells (a shard would hold nothing).
ShardSelection select_shard(const ShardSpec& spec, const Plan& full, const std::string& mode,
                            const std::string& backend, const Workload& workload);

// The report's `shard` block: index, count, source, plan_hash (+ method), plan_cells, predicted
// costs, the node (hostname, Slurm job and array task ids when set) and the cells held.
nlohmann::json shard_json(const ShardSelection& selection, const EnvironmentLookup& environment);

// Turns the mode's decision over the shard's rows into the shard's reported decision (see above).
void mark_partial_decision(Decision& decision, const ShardSelection& selection);

// The key that pairs a planned cell with its row: mechanism, variant, phase, sequence_length.
std::string cell_key(const std::string& mechanism, const std::string& variant, const std::string& phase,
                     std::int64_t sequence_length);

}  // namespace arch_bench
