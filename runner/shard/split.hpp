#pragma once
// The deterministic split of a plan into N shards balanced by predicted cost: greedy
// longest-processing-time (LPT) scheduling. Cells are taken in order of decreasing cost (ties: plan
// order) and each goes to the shard with the least predicted cost so far (ties: the lowest index).
// The N most expensive cells (the long-L softmax cells) therefore land in N different shards, and
// the most loaded shard exceeds the mean load by at most one cell's cost.
#include <cstdint>
#include <vector>

namespace arch_bench {

// costs[i] is the predicted cost of plan cell i; returns, per shard, the plan indices it holds in
// plan order. Every index appears in exactly one shard. `count` >= 1.
std::vector<std::vector<std::size_t>> split_by_cost(const std::vector<std::int64_t>& costs, std::int64_t count);

}  // namespace arch_bench
