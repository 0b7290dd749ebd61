#include "core/cell.hpp"

namespace arch_bench {

std::string phase_name(Phase phase) { return phase == Phase::decode ? "decode" : "prefill"; }

}  // namespace arch_bench
