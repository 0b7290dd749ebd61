#include "runner/pipeline/check_resources.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/backends/cuda/device_probe.hpp"
#include "core/errors.hpp"
#include "runner/preflight/memory_room.hpp"
#include "runner/report/output_path.hpp"

namespace arch_bench {

namespace {

std::string cell_label(const PlannedCell& planned) {
  return fmt::format("{} {} L={}{}", planned.cell.mechanism, phase_name(planned.cell.phase), planned.cell.sequence_length,
                     planned.arm.variant.empty() ? "" : " [" + planned.arm.variant + "]");
}

constexpr const char* kSmallerCells =
    "reduce --sequence-lengths, --batch, --query-heads or --head-dim (--dry-run writes the plan with every cell's "
    "predicted bytes)";

}  // namespace

std::int64_t host_bytes_of(const PlannedCell& planned, const std::string& backend) {
  // On a GPU the backend's buffers are device memory; the host keeps the rest of the cell.
  if (backend == "cuda") return std::max<std::int64_t>(0, planned.predicted_process_bytes - planned.predicted_peak_bytes);
  return planned.predicted_process_bytes;
}

std::optional<std::string> memory_shortage(const PlannedCell& planned, const std::string& backend,
                                           const std::optional<MemoryLimit>& host,
                                           std::optional<std::int64_t> device_free) {
  const std::int64_t host_bytes = host_bytes_of(planned, backend);
  if (host && host_bytes > host->room_bytes) {
    return fmt::format("the process is predicted to need {} for this cell ({} of buffers, the rest its inputs, "
                       "staging and fp64 reference), but only {} is available ({}: {})",
                       bytes_text(host_bytes), bytes_text(planned.predicted_peak_bytes), bytes_text(host->room_bytes),
                       host->source, host->detail);
  }
  if (backend == "cuda" && device_free && planned.predicted_peak_bytes > *device_free) {
    return fmt::format("its predicted peak is {} of device memory, but GPU 0 has {} free",
                       bytes_text(planned.predicted_peak_bytes), bytes_text(*device_free));
  }
  return std::nullopt;
}

void check_memory_fits(Plan& plan, const std::string& backend, const std::optional<MemoryLimit>& host,
                       std::optional<std::int64_t> device_free, bool skip_cells_that_do_not_fit) {
  for (PlannedCell& planned : plan.cells) {
    const std::optional<std::string> shortage = memory_shortage(planned, backend, host, device_free);
    if (!shortage) continue;
    if (skip_cells_that_do_not_fit) {
      planned.skip_reason = "not measured (--skip-cells-that-do-not-fit): " + *shortage;
      continue;
    }
    throw UsageError(fmt::format("{}: {}; nothing was allocated. {}, or pass --skip-cells-that-do-not-fit to measure "
                                 "the cells that fit",
                                 cell_label(planned), *shortage, kSmallerCells));
  }
}

void check_resources(Plan& plan, const Workload& workload, const std::string& backend,
                     const std::filesystem::path& output, bool skip_cells_that_do_not_fit) {
  std::optional<std::int64_t> device_free;
  if (backend == "cuda") {
    // Device memory: the GPU the CUDA backend will use (device 0), free now.
    const CudaProbe cuda = probe_cuda();
    const nlohmann::json free_bytes =
        cuda.devices.empty() ? nlohmann::json(nullptr) : cuda.devices[0].value("free_memory_bytes", nlohmann::json(nullptr));
    if (free_bytes.is_number_integer()) device_free = free_bytes.get<std::int64_t>();
  }
  check_memory_fits(plan, backend, read_memory_room().tightest(), device_free, skip_cells_that_do_not_fit);
  // Each row keeps every sample (about 48 bytes each as indented JSON) next to ~4 KiB of fields.
  const auto cells = static_cast<std::int64_t>(plan.cells.size());
  const std::int64_t report_bytes =
      64 * 1024 + cells * (4096 + std::min<std::int64_t>(workload.repeats, std::int64_t{1} << 40) * 48);
  check_free_space(output.parent_path(), "output folder", report_bytes, "the report");
}

}  // namespace arch_bench
