#include "runner/shard/split.hpp"

#include <algorithm>
#include <numeric>

namespace arch_bench {

std::vector<std::vector<std::size_t>> split_by_cost(const std::vector<std::int64_t>& costs, std::int64_t count) {
  const auto shards = static_cast<std::size_t>(std::max<std::int64_t>(1, count));
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<std::vector<std::size_t>> bins(shards);
  std::vector<std::int64_t> load(shards, 0);
  for (std::size_t cell : order) {
    // min_element returns the first of equal loads: the lowest shard index wins a tie.
    const auto bin = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    bins[bin].push_back(cell);
    load[bin] += costs[cell];
  }
  for (auto& bin : bins) std::sort(bin.begin(), bin.end());
  return bins;
}

}  // namespace arch_bench
