#pragma once
// `arch-bench merge SHARD.json... --output FULL.json`: joins the reports of the N shards of one plan
// (`run --shard I/N`) into one report that reads like an unsharded run's.
//
// Refused (UsageError, exit 2, naming the files): a report without a `shard` block; shards of
// different plans (plan hash, shard count), workloads (identity, workload block, arms, backend),
// tool versions (tool_version, git_commit, build_type, schema_version) or evidence kinds (dry runs
// with measured runs); shards measured on different hardware (CPU model, GPU names, or a ceiling more
// than the tolerance apart: runner/diff/hardware_identity.hpp) unless allowed; an index given twice; missing indices (named: a shard killed mid-run leaves no
// report); an interrupted shard, or one whose rows are not the cells it declares; shards whose cells
// do not partition the plan; a plan this arch-bench cannot rebuild from the workload block with the
// same plan hash (it would decide over another matrix).
//
// Otherwise: rows in plan order, each with its `shard`, `host` (hostname, CPU model) and `gpu`; the
// mode's decision rule (Mode::decide, as `run` applies it) over all rows; failure = the first failed
// row, as in `run`; evidence level the weakest of the shards'; identity.git_tree_modified true when
// any shard's is; top-level hardware is shard 0's and `merged_from.shards[]` keeps every shard's
// hardware, node, Slurm ids and file.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/diff/load_report.hpp"

namespace arch_bench {

struct MergeContext {
  std::string command_line;              // recorded as identity.command_line
  std::string created_at;                // identity.created_at of the merged report
  std::optional<std::string> run_label;  // identity.run_label (default: the shards' common label)
  // The cost-based split puts whole arms in different shards, so a decision over shards of different
  // machines compares the machines in every ratio: refused unless allowed (then said in the notes).
  bool allow_hardware_change = false;
  // Ceilings (memory bandwidth, peak FLOP/s) of two shards further apart than this fraction mean
  // different machines even under one CPU model name. Two shards measured one after the other on a
  // loaded 2-core VM read their ceilings 8-11% apart; shards sharing a node at once can differ more.
  double ceiling_tolerance = 0.25;
};

// `shards` must be read and schema-validated (load_report.hpp). Returns the merged document (not yet
// validated against the schema: the caller validates before writing, as for every report).
nlohmann::json merge_shard_reports(const std::vector<LoadedReport>& shards, const MergeContext& context);

}  // namespace arch_bench
