#include "runner/pipeline/workload.hpp"

namespace arch_bench {

std::string cache_state_name(CacheState state) { return state == CacheState::cold ? "cold" : "hot"; }

std::int64_t samples_in_round(std::int64_t repeats, std::int64_t rounds, std::int64_t round) {
  return repeats / rounds + (round < repeats % rounds ? 1 : 0);
}

}  // namespace arch_bench
