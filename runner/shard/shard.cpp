#include "runner/shard/shard.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/shard/cost_model.hpp"
#include "runner/shard/plan_hash.hpp"
#include "runner/shard/split.hpp"

namespace arch_bench {

ShardSelection select_shard(const ShardSpec& spec, const Plan& full, const std::string& mode,
                            const std::string& backend, const Workload& workload) {
  if (static_cast<std::size_t>(spec.count) > full.cells.size()) {
    throw UsageError(fmt::format("--shard {}/{}: the plan has {} cells, so it splits into at most {} shards (a shard "
                                 "would hold nothing); use N <= {}",
                                 spec.index, spec.count, full.cells.size(), full.cells.size(), full.cells.size()));
  }
  ShardSelection selection;
  selection.spec = spec;
  selection.plan_hash = plan_hash(mode, backend, workload, full);
  selection.plan_cells = full.cells.size();
  std::vector<std::int64_t> costs;
  for (const PlannedCell& planned : full.cells) {
    costs.push_back(predicted_cost_us(planned, workload, backend));
    selection.plan_cost_us += costs.back();
  }
  selection.plan_indices = split_by_cost(costs, spec.count)[static_cast<std::size_t>(spec.index)];
  for (std::size_t index : selection.plan_indices) {
    selection.plan.cells.push_back(full.cells[index]);
    selection.cost_us.push_back(costs[index]);
    selection.shard_cost_us += costs[index];
  }
  return selection;
}

namespace {
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name[0] == '\0' ? "unknown" : name;
}
}  // namespace

nlohmann::json shard_json(const ShardSelection& s, const EnvironmentLookup& environment) {
  nlohmann::json cells = nlohmann::json::array();
  for (std::size_t i = 0; i < s.plan.cells.size(); ++i) {
    const PlannedCell& planned = s.plan.cells[i];
    cells.push_back({{"plan_index", s.plan_indices[i]},
                     {"mechanism", planned.cell.mechanism},
                     {"variant", planned.arm.variant},
                     {"role", role_name(planned.arm.role)},
                     {"phase", phase_name(planned.cell.phase)},
                     {"sequence_length", planned.cell.sequence_length},
                     {"predicted_cost_us", s.cost_us[i]}});
  }
  nlohmann::json slurm = nlohmann::json::object();
  for (const char* name : {"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
                           "SLURMD_NODENAME", "SLURM_JOB_GPUS"}) {
    if (const auto value = environment(name)) slurm[name] = *value;
  }
  return {{"index", s.spec.index},
          {"count", s.spec.count},
          {"source", s.spec.source},
          {"plan_hash", s.plan_hash},
          {"plan_hash_method", kPlanHashMethod},
          {"plan_cells", s.plan_cells},
          {"predicted_cost_us", s.shard_cost_us},
          {"plan_predicted_cost_us", s.plan_cost_us},
          {"hostname", host_name()},
          {"slurm", slurm.empty() ? nlohmann::json(nullptr) : slurm},
          {"cells", cells}};
}

void mark_partial_decision(Decision& decision, const ShardSelection& s) {
  nlohmann::json from_rows = {{"verdict", decision.verdict},
                              {"crossover_length", decision.crossover_length ? nlohmann::json(*decision.crossover_length)
                                                                             : nlohmann::json(nullptr)},
                              {"reasons", decision.reasons}};
  if (!decision.details.is_object()) decision.details = nlohmann::json::object();
  decision.details["partial_matrix"] = {
      {"description", "the mode's decision rule applied to this shard's rows only; not a verdict on the matrix"},
      {"decision_from_shard_rows", from_rows}};
  decision.verdict = "inconclusive";
  decision.crossover_length.reset();
  decision.reasons.insert(decision.reasons.begin(),
                          fmt::format("partial matrix: shard {} of {} holds {} of the plan's {} cells; merge the shards "
                                      "(arch-bench merge) to decide over the whole matrix",
                                      s.spec.index, s.spec.count, s.plan.cells.size(), s.plan_cells));
  decision.next_action = fmt::format("arch-bench merge <the {} shard reports of plan {}> --output FULL.json, then read "
                                     "the merged report's decision",
                                     s.spec.count, s.plan_hash);
}

std::string cell_key(const std::string& mechanism, const std::string& variant, const std::string& phase,
                     std::int64_t sequence_length) {
  return fmt::format("{} [{}] {} L={}", mechanism, variant, phase, sequence_length);
}

}  // namespace arch_bench
