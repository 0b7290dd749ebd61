#include "runner/core/workload.hpp"

namespace arch_bench {

std::string cache_state_name(CacheState state) { return state == CacheState::cold ? "cold" : "hot"; }

}  // namespace arch_bench
