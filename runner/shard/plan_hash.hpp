#pragma once
// The plan hash: what lets `arch-bench merge` tell shards of one plan from shards of another. It is
// computed over the full plan (before the split), so all N shards of one plan carry the same hash.
//
// Canonical JSON: {"format": "arch-bench-plan-1", "mode", "backend", "workload" (the report's
// workload block without `threads`, which defaults to each node's core count and does not change
// the cells), "cells" (the dry-run plan entries, each with its mechanism options)}, serialised by
// nlohmann::json's dump() with no indentation (object keys sorted, shortest round-trip numbers).
// Hash: 64-bit FNV-1a of those bytes, written "fnv1a64:" + 16 lower-case hex digits. It detects
// accidental mismatches between shards; it is not a cryptographic digest.
#include <string>

#include <nlohmann/json.hpp>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

inline constexpr const char* kPlanHashMethod =
    "fnv1a64 of the canonical plan JSON (mode, backend, workload without threads, cells with options; "
    "nlohmann::json dump(), keys sorted)";

nlohmann::json canonical_plan_json(const std::string& mode, const std::string& backend, const Workload& workload,
                                   const Plan& plan);
std::string fnv1a64_hex(const std::string& bytes);  // "fnv1a64:0123456789abcdef"
std::string plan_hash(const std::string& mode, const std::string& backend, const Workload& workload,
                      const Plan& plan);

}  // namespace arch_bench
