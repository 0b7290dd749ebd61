#pragma once
// The workload matrix and measurement settings of one run, after defaults, profile and command
// line have been merged.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/timing.hpp"
#include "core/cell.hpp"

namespace arch_bench {

struct ModelRun;  // runner/models/model_workload.hpp

enum class CacheState { cold, hot };
std::string cache_state_name(CacheState state);

// The samples round `round` (0-based) of `rounds` takes out of `repeats`: an even split, one more
// for each of the first repeats % rounds rounds. Needs 1 <= rounds <= repeats (validate_workload).
std::int64_t samples_in_round(std::int64_t repeats, std::int64_t rounds, std::int64_t round);

struct Workload {
  std::vector<std::int64_t> sequence_lengths;
  std::int64_t batch = 1;
  std::int64_t heads = 8;
  std::int64_t head_dim = 64;
  DType dtype = DType::bfloat16;
  std::vector<Phase> phases{Phase::decode};
  std::int64_t warmup = 10;
  std::int64_t repeats = 100;
  // Passes over the plan that share the repeats: round r visits every cell in plan order (prepare,
  // warmup, its share of the samples), so each cell's samples span the whole run and a slow spell of
  // the host (another guest on the core, memory traffic) falls on every cell alike instead of on
  // whichever cell was running. 1: each cell measured once, start to finish.
  std::int64_t rounds = 1;
  CacheState cache_state = CacheState::cold;
  TimingPlan timing;  // steady_clock on the CPU; cuda_events[_batched] or cuda_graph on the GPU
  int threads = 1;
  // CPU, two threads or more: before each visit's samples, time a short step (under 0.2 ms) on the
  // team and on one thread, and take the samples on the faster (runner/measure/team_trial.hpp).
  // Off: every sample on the whole team, split or not as each kernel's fixed threshold says.
  bool team_trial = true;
  std::uint64_t seed = 0;
  MechanismOptions options;  // the mechanisms' options given (feature map, state size, ...), by key
  // Options given as lists, which a mode sweeps (OptionSpec::axis; performer's m values), by key.
  std::map<std::string, std::vector<OptionValue>, std::less<>> axes;
  std::string feature_kind = "positive";  // performer candidates: "positive", "trig" or "both"
  std::vector<std::string> candidates;     // landscape: the candidate mechanisms (empty: every one)
  // --model: the preset whose layer types the landscape measures at their own shapes; null without.
  std::shared_ptr<const ModelRun> model;
};

}  // namespace arch_bench
