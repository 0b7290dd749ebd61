#pragma once
// A plugin mechanism is prepared, run and checked once per phase on a tiny fp32 CPU cell when it is
// loaded, so that one whose prepare(), run() or check() throws is refused (exit 2) before anything
// is planned or measured, rather than failing row by row in the middle of a run.
#include <string>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Throws UsageError naming `plugin_path`, the mechanism, the cell and the exception's message.
void self_check_mechanism(const Mechanism& mechanism, const std::string& plugin_path);

}  // namespace arch_bench
