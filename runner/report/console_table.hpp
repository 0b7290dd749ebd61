#pragma once
// The short human summary printed after a run: one line per row, then the decision.
#include <cstdio>

#include "runner/report/report.hpp"

namespace arch_bench {

void print_run_table(std::FILE* out, const RunReport& report);

}  // namespace arch_bench
