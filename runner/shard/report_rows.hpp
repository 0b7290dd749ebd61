#pragma once
// Reading a result report back into the structures the modes decide on: a Row per metrics.rows entry
// and the Workload of the `workload` block. `arch-bench merge` needs them to apply the mode's own
// decision rule (Mode::decide) to the joined rows. The inverse of runner/report/report_json.cpp for
// what a decision reads; `null` statistics (rows not measured) read as 0, `null` errors as NaN.
#include <nlohmann/json.hpp>

#include "runner/pipeline/run_result.hpp"
#include "runner/pipeline/workload.hpp"
#include "runner/modes/mode.hpp"

namespace arch_bench {

// `row` must be a schema-valid metrics.rows entry; throws UsageError naming the field otherwise.
Row row_from_json(const nlohmann::json& row);

// The workload of a schema-valid report: the mode's defaults (for what the report does not record,
// such as performer's feature kind), overwritten by every setting of its `workload` block; the
// candidates are the report's `candidates` arms. Throws UsageError naming the field at fault.
Workload workload_from_report(const nlohmann::json& report, const Mode& mode);

}  // namespace arch_bench
