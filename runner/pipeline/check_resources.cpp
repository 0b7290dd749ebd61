#include "runner/pipeline/check_resources.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/backends/cuda/device_probe.hpp"
#include "core/errors.hpp"
#include "runner/preflight/machine_facts.hpp"
#include "runner/report/output_path.hpp"

namespace arch_bench {

namespace {

// Refuses the first planned cell whose predicted peak is above `limit` bytes; `shortage` completes
// "its predicted peak is X" with what memory that is and how much there is.
void refuse_cells_above(const Plan& plan, std::int64_t limit, const std::string& shortage) {
  for (const PlannedCell& planned : plan.cells) {
    if (planned.predicted_peak_bytes <= limit) continue;
    throw UsageError(fmt::format("{} {} L={}{}: its predicted peak is {}{}; reduce --sequence-lengths, --batch, "
                                 "--query-heads or --head-dim (--dry-run writes the plan with every cell's predicted "
                                 "bytes)",
                                 planned.cell.mechanism, phase_name(planned.cell.phase), planned.cell.sequence_length,
                                 planned.arm.variant.empty() ? "" : " [" + planned.arm.variant + "]",
                                 bytes_text(planned.predicted_peak_bytes), shortage));
  }
}

}  // namespace

void check_resources(const Plan& plan, const Workload& workload, const std::string& backend,
                     const std::filesystem::path& output) {
  const std::optional<std::int64_t> available = mem_available_bytes();
  if (backend == "cpu" && available) {
    refuse_cells_above(plan, *available, fmt::format(", but this machine has {} available (MemAvailable)",
                                                     bytes_text(*available)));
  }
  if (backend == "cuda") {
    // Device memory: the GPU the CUDA backend will use (device 0), free now.
    const CudaProbe cuda = probe_cuda();
    const nlohmann::json free_bytes =
        cuda.devices.empty() ? nlohmann::json(nullptr) : cuda.devices[0].value("free_memory_bytes", nlohmann::json(nullptr));
    if (free_bytes.is_number_integer()) {
      const std::int64_t free_now = free_bytes.get<std::int64_t>();
      refuse_cells_above(plan, free_now, fmt::format(" of device memory, but GPU 0 has {} free", bytes_text(free_now)));
    }
  }
  // Each row keeps every sample (about 48 bytes each as indented JSON) next to ~4 KiB of fields.
  const auto cells = static_cast<std::int64_t>(plan.cells.size());
  const std::int64_t report_bytes =
      64 * 1024 + cells * (4096 + std::min<std::int64_t>(workload.repeats, std::int64_t{1} << 40) * 48);
  check_free_space(output.parent_path(), "output folder", report_bytes, "the report");
}

}  // namespace arch_bench
