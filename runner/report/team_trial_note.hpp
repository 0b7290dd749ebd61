#pragma once
// The run's note on the team trial (runner/measure/team_trial.hpp): which rows took samples on one
// thread, so that a reader of the console sees it next to the medians, not only in the JSON.
#include <optional>
#include <span>
#include <string>

#include "runner/pipeline/run_result.hpp"

namespace arch_bench {

// nullopt when no row took a sample on one thread; else one line naming how many rows did and the
// first few of them, each with its count of samples and the trial's medians on each side.
std::optional<std::string> team_trial_note(std::span<const Row> rows);

}  // namespace arch_bench
