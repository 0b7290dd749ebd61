#include "runner/shard/merge.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "build_info.hpp"
#include "core/errors.hpp"
#include "runner/diff/hardware_identity.hpp"
#include "runner/pipeline/plan.hpp"
#include "runner/modes/mode.hpp"
#include "runner/preflight/dry_run.hpp"
#include "runner/report/report.hpp"
#include "runner/shard/plan_hash.hpp"
#include "runner/shard/report_rows.hpp"
#include "runner/shard/shard.hpp"

namespace arch_bench {

namespace {
using nlohmann::json;

const json& at(const json& document, const char* pointer) {
  static const json kNull = nullptr;
  const json::json_pointer where(pointer);
  return document.contains(where) ? document.at(where) : kNull;
}

std::string shown(const json& value) {
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

std::string files_of(const std::vector<const LoadedReport*>& reports) {
  std::vector<std::string> names;
  for (const LoadedReport* report : reports) names.push_back(report->file);
  return fmt::format("{}", fmt::join(names, ", "));
}

// Every shard must agree on `value(shard)`; else the refusal lists each value with its files.
template <typename Value>
void require_same(const std::vector<const LoadedReport*>& shards, const std::string& what, const std::string& field,
                  Value value) {
  std::vector<std::pair<json, std::vector<const LoadedReport*>>> groups;
  for (const LoadedReport* shard : shards) {
    const json v = value(shard->document);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
    if (group == groups.end()) groups.push_back({v, {shard}});
    else group->second.push_back(shard);
  }
  if (groups.size() <= 1) return;
  std::vector<std::string> parts;
  for (const auto& [v, files] : groups) parts.push_back(fmt::format("{} in {}", shown(v), files_of(files)));
  throw UsageError(fmt::format("refusing to merge shards of different {}: {} differs ({}); merge only the shards of "
                               "one `run --shard` sweep",
                               what, field, fmt::join(parts, "; ")));
}

json workload_without_threads(const json& document) {
  json workload = at(document, "/workload");
  if (workload.is_object()) {
    workload.erase("threads");
    workload.erase("omp_wait_policy");  // the node's environment, recorded per shard
  }
  return workload;
}

void check_same_sweep(const std::vector<const LoadedReport*>& shards) {
  auto field = [](const char* pointer) { return [pointer](const json& d) { return at(d, pointer); }; };
  require_same(shards, "plans", "shard.plan_hash", field("/shard/plan_hash"));
  require_same(shards, "plans", "shard.count", field("/shard/count"));
  require_same(shards, "plans", "shard.plan_cells", field("/shard/plan_cells"));
  for (const char* pointer : {"/identity/mode", "/identity/workload_id", "/identity/semantic_id",
                              "/identity/profile_id", "/identity/seed", "/hardware/backend"}) {
    require_same(shards, "workloads", std::string(pointer + 1), field(pointer));
  }
  require_same(shards, "workloads", "workload", workload_without_threads);
  require_same(shards, "workloads", "baseline", field("/baseline"));
  require_same(shards, "workloads", "candidates", field("/candidates"));
  for (const char* pointer : {"/identity/tool_version", "/identity/git_commit", "/identity/build_type",
                              "/schema_version"}) {
    require_same(shards, "tool versions", std::string(pointer + 1), field(pointer));
  }
  require_same(shards, "evidence kinds", "evidence_level (dry_run or measured)",
               [](const json& d) { return json(at(d, "/evidence_level") == "dry_run" ? "dry_run" : "measured"); });
}

// Every shard against shard 0 (the lowest index): CPU model, GPU names and ceilings. Returns the notes
// for the merged report when the differences are allowed; throws when they are not.
std::vector<std::string> check_same_hardware(const std::vector<const LoadedReport*>& shards,
                                             const MergeContext& context) {
  std::vector<std::string> differences;
  for (std::size_t i = 1; i < shards.size(); ++i) {
    for (const HardwareDifference& difference :
         hardware_differences(shards.front()->document, shards.front()->file, shards[i]->document, shards[i]->file,
                              context.ceiling_tolerance)) {
      differences.push_back(difference.message);
    }
  }
  if (differences.empty()) return {};
  if (!context.allow_hardware_change) {
    throw UsageError(fmt::format("refusing to merge shards measured on different hardware: {}. The split puts whole "
                                 "arms in different shards, so the decision's ratios would compare machines, not "
                                 "mechanisms; run every shard on one kind of node (e.g. sbatch --constraint), widen "
                                 "--ceiling-tolerance (now {:.0f}%) if the nodes are alike and their readings noisy, or "
                                 "pass --allow-hardware-change to merge anyway",
                                 fmt::join(differences, "; "), 100 * context.ceiling_tolerance));
  }
  std::vector<std::string> notes;
  for (const std::string& difference : differences) {
    notes.push_back(fmt::format("merged across different hardware because of --allow-hardware-change: {}; ratios "
                                "between rows of different shards compare the machines as much as the mechanisms",
                                difference));
  }
  return notes;
}

std::string ordinal_list(const std::vector<std::int64_t>& values) { return fmt::format("{}", fmt::join(values, ", ")); }

// One shard report per index 0..N-1; returns them ordered by index.
std::vector<const LoadedReport*> order_by_index(const std::vector<const LoadedReport*>& shards) {
  const std::int64_t count = at(shards.front()->document, "/shard/count").get<std::int64_t>();
  std::map<std::int64_t, std::vector<const LoadedReport*>> by_index;
  for (const LoadedReport* shard : shards) by_index[at(shard->document, "/shard/index").get<std::int64_t>()].push_back(shard);
  for (const auto& [index, files] : by_index) {
    if (files.size() > 1) {
      throw UsageError(fmt::format("refusing to merge: shard {} of {} is given {} times ({}); give each shard's report "
                                   "once",
                                   index, count, files.size(), files_of(files)));
    }
  }
  std::vector<std::int64_t> missing;
  for (std::int64_t index = 0; index < count; ++index) {
    if (!by_index.contains(index)) missing.push_back(index);
  }
  if (!missing.empty()) {
    throw UsageError(fmt::format("refusing to merge: missing shard{} {} of {} (plan {}); {} given ({}). A shard "
                                 "killed mid-run leaves no report: re-run it with --shard {}/{} (same options) and "
                                 "merge again",
                                 missing.size() == 1 ? "" : "s", ordinal_list(missing), count,
                                 shown(at(shards.front()->document, "/shard/plan_hash")), shards.size(),
                                 files_of(shards), missing.front(), count));
  }
  std::vector<const LoadedReport*> ordered;
  for (const auto& [index, files] : by_index) ordered.push_back(files.front());
  return ordered;
}

std::string key_of(const json& entry) {
  return cell_key(entry.value("mechanism", ""), entry.value("variant", ""), entry.value("phase", ""),
                  entry.value("sequence_length", std::int64_t{0}));
}

// The shard's rows must be exactly the cells it declares, in that order (a dry run has no rows).
void check_rows_match_cells(const LoadedReport& shard, bool dry_run) {
  const json& document = shard.document;
  const std::int64_t index = at(document, "/shard/index").get<std::int64_t>();
  const json& failure = at(document, "/failure");
  if (failure.is_object() && failure.value("kind", "") == "interrupted") {
    throw UsageError(fmt::format("refusing to merge: shard {} ({}) was interrupted ({}); re-run it with --shard {}/{} "
                                 "and merge again",
                                 index, shard.file, shown(failure.value("message", "")), index,
                                 at(document, "/shard/count").get<std::int64_t>()));
  }
  const json& cells = at(document, "/shard/cells");
  const json& rows = at(document, "/metrics/rows");
  if (dry_run) return;
  for (std::size_t i = 0; i < std::max(cells.size(), rows.size()); ++i) {
    const std::string declared = i < cells.size() ? key_of(cells[i]) : std::string("nothing");
    const std::string held = i < rows.size() ? key_of(rows[i]) : std::string("no row");
    if (declared != held) {
      throw UsageError(fmt::format("refusing to merge: {} (shard {}) declares {} cells but holds {} rows; cell {} is "
                                   "{}, its row {}; re-run that shard",
                                   shard.file, index, cells.size(), rows.size(), i, declared, held));
    }
  }
}

// Every plan index 0..plan_cells-1 in exactly one shard; returns (shard position, cell position) per index.
std::vector<std::pair<std::size_t, std::size_t>> plan_positions(const std::vector<const LoadedReport*>& shards) {
  const auto plan_cells = at(shards.front()->document, "/shard/plan_cells").get<std::size_t>();
  std::vector<std::pair<std::size_t, std::size_t>> where(plan_cells, {SIZE_MAX, 0});
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const json& cells = at(shards[s]->document, "/shard/cells");
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const auto index = cells[c].value("plan_index", SIZE_MAX);
      if (index >= plan_cells) {
        throw UsageError(fmt::format("refusing to merge: {} names plan cell {} of a plan of {} cells", shards[s]->file,
                                     index, plan_cells));
      }
      if (where[index].first != SIZE_MAX) {
        throw UsageError(fmt::format("refusing to merge: plan cell {} ({}) is in both {} and {}; the shards do not "
                                     "partition the plan (were they split by different arch-bench builds?)",
                                     index, key_of(cells[c]), shards[where[index].first]->file, shards[s]->file));
      }
      where[index] = {s, c};
    }
  }
  for (std::size_t index = 0; index < plan_cells; ++index) {
    if (where[index].first == SIZE_MAX) {
      throw UsageError(fmt::format("refusing to merge: plan cell {} is in none of the shards; the shards do not "
                                   "partition the plan (were they split by different arch-bench builds?)",
                                   index));
    }
  }
  return where;
}

// The plan of the shards, rebuilt here from their workload; its hash must be theirs, or this
// arch-bench would decide over another matrix than the one measured.
Plan rebuilt_plan(const Mode& mode, const Workload& workload, const std::string& backend, const std::string& hash,
                  const std::string& files) {
  Plan plan;
  try {
    plan = build_plan(mode, workload, backend);
  } catch (const UsageError&) {
    // Merging GPU shards on a login node built without CUDA: the cells and their bytes do not depend
    // on which backend checks them, and the hash keeps the recorded backend.
    try {
      plan = build_plan(mode, workload, "cpu");
    } catch (const UsageError& error) {
      throw UsageError(fmt::format("refusing to merge {}: their plan cannot be rebuilt here: {} (plugin mechanisms "
                                   "need the same --plugin as the shards)",
                                   files, error.what()));
    }
  }
  const std::string rebuilt = plan_hash(mode.id(), backend, workload, plan);
  if (rebuilt != hash) {
    throw UsageError(fmt::format("refusing to merge {}: this arch-bench ({} {}) rebuilds their workload into a plan "
                                 "with hash {}, not the shards' {}; merge with the arch-bench build that ran them",
                                 files, build_info::tool_version, build_info::git_commit, rebuilt, hash));
  }
  return plan;
}

json row_gpu(const json& hardware) {
  const json& gpu = hardware.value("gpu", json(nullptr));
  const json& device = gpu.is_array() ? (gpu.empty() ? json(nullptr) : gpu.front()) : gpu;
  if (!device.is_object()) return nullptr;
  return device.value("name", json(nullptr));
}

int evidence_rank(const std::string& level) { return level == "gpu_measured" ? 2 : level == "cpu_measured" ? 1 : 0; }
}  // namespace

json merge_shard_reports(const std::vector<LoadedReport>& reports, const MergeContext& context) {
  if (reports.empty()) throw UsageError("merge: give the shard reports to merge");
  std::vector<const LoadedReport*> given;
  for (const LoadedReport& report : reports) {
    if (!at(report.document, "/shard").is_object()) {
      throw UsageError(fmt::format("refusing to merge: {} has no `shard` block, so it is not the report of a `run "
                                   "--shard I/N`",
                                   report.file));
    }
    given.push_back(&report);
  }
  check_same_sweep(given);
  const std::vector<const LoadedReport*> shards = order_by_index(given);
  const std::vector<std::string> hardware_notes = check_same_hardware(shards, context);
  const json& first = shards.front()->document;
  const bool dry_run = at(first, "/evidence_level") == "dry_run";
  for (const LoadedReport* shard : shards) check_rows_match_cells(*shard, dry_run);
  const auto positions = plan_positions(shards);

  const std::string mode_id = at(first, "/identity/mode").get<std::string>();
  const Mode* mode = find_mode(mode_id);
  if (mode == nullptr) throw UsageError(fmt::format("refusing to merge: mode {} is not known to this arch-bench", mode_id));
  const Workload workload = workload_from_report(first, *mode);
  const std::string backend = at(first, "/hardware/backend").get<std::string>();
  const std::string hash = at(first, "/shard/plan_hash").get<std::string>();
  const Plan plan = rebuilt_plan(*mode, workload, backend, hash, files_of(shards));

  // Rows in plan order, each marked with the shard and the node that measured it.
  json rows = json::array();
  std::vector<Row> parsed;
  if (!dry_run) {
    for (const auto& [s, c] : positions) {
      const json& shard = shards[s]->document;
      json row = at(shard, "/metrics/rows")[c];
      row["shard"] = at(shard, "/shard/index");
      row["host"] = {{"hostname", at(shard, "/shard/hostname")},
                     {"cpu_model", at(shard, "/hardware/host").value("cpu_model", json(nullptr))}};
      row["gpu"] = row_gpu(at(shard, "/hardware"));
      try {
        parsed.push_back(row_from_json(row));
      } catch (const UsageError& error) {
        throw UsageError(fmt::format("{}: row {}: {}", shards[s]->file, c, error.what()));
      }
      rows.push_back(std::move(row));
    }
  }

  // The decision, as `run` makes it: the mode's rule over every row, failure = the first failed row.
  RunReport verdict;
  if (dry_run) {
    verdict.decision = dry_run_decision(plan, at(first, "/identity/profile_id").get<std::string>(), {});
  } else {
    verdict.decision = mode->decide(parsed, workload);
    for (const Row& row : parsed) {
      if (row.status == RowStatus::failed && !verdict.failure) {
        verdict.failure = Failure{row.failure_kind.empty() ? "mechanism_error" : row.failure_kind, row.reason, row.cell};
      }
    }
  }
  const json judged = to_json(verdict);

  json merged = first;
  merged.erase("shard");
  merged["identity"]["created_at"] = context.created_at;
  merged["identity"]["command_line"] = context.command_line;
  std::set<std::string> labels;
  for (const LoadedReport* shard : shards) labels.insert(at(shard->document, "/identity/run_label").get<std::string>());
  // One shard built from a modified tree makes the merged report's numbers come from one (issue 42).
  bool any_modified = false, any_recorded = false;
  for (const LoadedReport* shard : shards) {
    const json& modified = at(shard->document, "/identity/git_tree_modified");
    any_recorded = any_recorded || modified.is_boolean();
    any_modified = any_modified || (modified.is_boolean() && modified.get<bool>());
  }
  if (any_recorded) merged["identity"]["git_tree_modified"] = any_modified;
  if (context.run_label) merged["identity"]["run_label"] = *context.run_label;
  merged["metrics"]["rows"] = rows;
  merged["decision"] = judged["decision"];
  merged["failure"] = judged["failure"];
  // A dry run's failure (a failed preflight) is the shards' own, not a row's.
  for (const LoadedReport* shard : shards) {
    if (merged["failure"].is_null() && at(shard->document, "/failure").is_object()) {
      merged["failure"] = at(shard->document, "/failure");
    }
  }
  if (dry_run) merged["plan"] = plan_to_json(plan);

  std::string weakest = at(first, "/evidence_level").get<std::string>();
  std::int64_t peak_rss = 0;
  std::set<std::int64_t> threads;
  json notes = json::array();
  json parts = json::array();
  for (const LoadedReport* shard : shards) {
    const json& d = shard->document;
    const std::string level = at(d, "/evidence_level").get<std::string>();
    if (evidence_rank(level) < evidence_rank(weakest)) weakest = level;
    peak_rss = std::max(peak_rss, at(d, "/metrics").value("process_peak_rss_bytes", std::int64_t{0}));
    threads.insert(at(d, "/workload/threads").get<std::int64_t>());
    for (const json& note : at(d, "/notes").is_array() ? at(d, "/notes") : json::array()) {
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
    json part = {{"index", at(d, "/shard/index")},
                 {"file", shard->file},
                 {"hostname", at(d, "/shard/hostname")},
                 {"slurm", at(d, "/shard/slurm")},
                 {"run_label", at(d, "/identity/run_label")},
                 {"created_at", at(d, "/identity/created_at")},
                 {"command_line", at(d, "/identity/command_line")},
                 {"evidence_level", level},
                 {"cells", at(d, "/shard/cells").size()},
                 {"predicted_cost_us", at(d, "/shard/predicted_cost_us")},
                 {"threads", at(d, "/workload/threads")},
                 {"omp_wait_policy", at(d, "/workload/omp_wait_policy")},
                 {"hardware", at(d, "/hardware")},
                 {"failure", at(d, "/failure")}};
    if (at(d, "/profile").is_object()) part["profile"] = at(d, "/profile");
    parts.push_back(std::move(part));
  }
  merged["evidence_level"] = weakest;
  merged["metrics"]["process_peak_rss_bytes"] = peak_rss;
  notes.insert(notes.begin(),
               fmt::format("merged from {} shards of plan {} ({} cells); top-level hardware is shard 0's ({}); each "
                           "row's shard, host and gpu, and merged_from.shards[].hardware, say where it was measured",
                           shards.size(), hash, plan.cells.size(), shown(at(first, "/shard/hostname"))));
  for (const std::string& note : hardware_notes) notes.push_back(note);
  if (threads.size() > 1) {
    notes.push_back(fmt::format("the shards ran with different thread counts ({}); workload.threads is shard 0's, "
                                "merged_from.shards[].threads each shard's",
                                fmt::join(threads, ", ")));
  }
  if (labels.size() > 1 && !context.run_label) {
    notes.push_back(fmt::format("the shards have different run labels ({}); identity.run_label is shard 0's",
                                fmt::join(labels, ", ")));
  }
  merged["notes"] = notes;
  merged["merged_from"] = {{"plan_hash", hash},
                           {"plan_hash_method", kPlanHashMethod},
                           {"plan_cells", plan.cells.size()},
                           {"count", shards.size()},
                           {"merged_by", {{"tool_version", build_info::tool_version},
                                          {"git_commit", build_info::git_commit}}},
                           {"shards", parts}};
  if (!dry_run) {
    const json extras = mode->report_extras(parsed, workload);
    if (extras.is_object()) merged.update(extras);
  }
  return merged;
}

}  // namespace arch_bench
