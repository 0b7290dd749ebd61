#pragma once
// Up front, for every measuring run: the largest cell must fit in the memory available now (the
// profile's preflight adds its margin on top), and the report in the free space of its folder.
// Refused with exit 2 rather than found out after the ceilings were measured, one bad_alloc per row.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/preflight/memory_room.hpp"

namespace arch_bench {

// Each cell's predicted process bytes (Mechanism::predicted_process_bytes; on "cuda" less the
// buffers, which are device memory) against the tightest of MemAvailable and the cgroup's limit
// (runner/preflight/memory_room.hpp), and on "cuda" each cell's predicted peak against GPU 0's free
// memory. Throws UsageError naming the first cell that does not fit (with
// `skip_cells_that_do_not_fit`, marks it skipped instead: PlannedCell::skip_reason), or the output
// folder when the report (about 4 KiB a row plus its samples) would not.
void check_resources(Plan& plan, const Workload& workload, const std::string& backend,
                     const std::filesystem::path& output, bool skip_cells_that_do_not_fit = false);

// What the host must hold for `planned` on `backend`.
std::int64_t host_bytes_of(const PlannedCell& planned, const std::string& backend);
// The memory part of check_resources on given numbers (tests hand it made-up machines): `host` the
// tightest limit (nullopt: unknown, nothing refused), `device_free` GPU 0's free bytes.
void check_memory_fits(Plan& plan, const std::string& backend, const std::optional<MemoryLimit>& host,
                       std::optional<std::int64_t> device_free, bool skip_cells_that_do_not_fit = false);

}  // namespace arch_bench
