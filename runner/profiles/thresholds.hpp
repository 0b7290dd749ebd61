#pragma once
// A profile's decision thresholds applied to measured rows.
#include <span>
#include <string>
#include <vector>

#include "runner/pipeline/run_result.hpp"

namespace arch_bench {

// One note per measured row whose relative stdev exceeds `max_rel_stdev`: its mean is less
// trustworthy than the profile promises, and a reader should know before comparing it.
std::vector<std::string> noisy_row_notes(std::span<const Row> rows, double max_rel_stdev);

}  // namespace arch_bench
