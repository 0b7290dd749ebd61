#pragma once
// Up front, for every measuring run: the largest cell must fit in the memory available now (the
// profile's preflight adds its margin on top), and the report in the free space of its folder.
// Refused with exit 2 rather than found out after the ceilings were measured, one bad_alloc per row.
#include <filesystem>
#include <string>

#include "runner/pipeline/plan.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

// `backend` "cpu": each cell's predicted peak against MemAvailable; "cuda": against GPU 0's free
// memory. Throws UsageError naming the first cell that does not fit, or the output folder when the
// report (about 4 KiB a row plus its samples) would not.
void check_resources(const Plan& plan, const Workload& workload, const std::string& backend,
                     const std::filesystem::path& output);

}  // namespace arch_bench
