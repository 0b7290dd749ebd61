#include "runner/shard/plan_hash.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "runner/preflight/dry_run.hpp"
#include "runner/report/report.hpp"

namespace arch_bench {

nlohmann::json canonical_plan_json(const std::string& mode, const std::string& backend, const Workload& workload,
                                   const Plan& plan) {
  // The report's own serialisers, so that a setting added to the workload or to the mechanism
  // options later is part of the hash without touching this file.
  RunReport holder;
  holder.workload = workload;
  nlohmann::json workload_json = to_json(holder)["workload"];
  workload_json.erase("threads");
  nlohmann::json cells = plan_to_json(plan);
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    Row row;
    row.cell = plan.cells[i].cell;
    cells[i]["options"] = to_json(row)["options"];
    // Not part of the plan's identity: it follows the node's thread count (performer's and mamba's
    // per-thread scratch) and the model of process memory, which a later version may refine.
    cells[i].erase("predicted_process_bytes");
  }
  return {{"format", "arch-bench-plan-1"}, {"mode", mode}, {"backend", backend}, {"workload", workload_json},
          {"cells", cells}};
}

std::string fnv1a64_hex(const std::string& bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV offset basis
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;  // FNV prime
  }
  return fmt::format("fnv1a64:{:016x}", hash);
}

std::string plan_hash(const std::string& mode, const std::string& backend, const Workload& workload,
                      const Plan& plan) {
  return fnv1a64_hex(canonical_plan_json(mode, backend, workload, plan).dump());
}

}  // namespace arch_bench
