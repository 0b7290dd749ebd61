#include "runner/plugins/self_check.hpp"

#include <algorithm>
#include <exception>
#include <optional>

#include <fmt/format.h>

#include "core/backends/cpu/cpu_backend.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {

// The first of a few small head dims the mechanism accepts (it may restrict head_dim), or nullopt.
std::optional<Cell> self_check_cell(const Mechanism& mechanism, Phase phase) {
  for (std::int64_t head_dim : {32, 64, 16, 128}) {
    Cell cell;
    cell.mechanism = mechanism.info().id;
    cell.phase = phase;
    cell.sequence_length = 16;
    cell.batch = 1;
    cell.heads = 2;
    cell.head_dim = head_dim;
    cell.dtype = DType::float32;
    if (!mechanism.unsupported(cell) && !mechanism.unsupported_on(cell, "cpu")) return cell;
  }
  return std::nullopt;
}

}  // namespace

void self_check_mechanism(const Mechanism& mechanism, const std::string& plugin_path) {
  const MechanismInfo& info = mechanism.info();
  if (std::ranges::find(info.backends, "cpu") == info.backends.end()) {
    throw UsageError(fmt::format("--plugin {}: mechanism {} has no cpu backend; a plugin mechanism needs a CPU "
                                 "implementation (where it is self-checked, and the fallback of every run)",
                                 plugin_path, info.id));
  }
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    const std::optional<Cell> cell = self_check_cell(mechanism, phase);
    if (!cell) continue;  // a phase the mechanism does not take at these sizes: its rows are skipped
    const std::string where = fmt::format("{} {} L={} heads={} head_dim={} float32", info.id, phase_name(phase),
                                          cell->sequence_length, cell->heads, cell->head_dim);
    const char* step = "prepare()";
    try {
      CpuBackend backend;
      std::unique_ptr<PreparedCell> prepared = mechanism.prepare(*cell, 0, backend);
      if (prepared == nullptr) throw std::runtime_error("returned no prepared cell");
      step = "run()";
      prepared->run();
      step = "check()";
      (void)prepared->check();
      step = "buffers()";
      (void)prepared->buffers();
      step = "state_bytes()/predicted_peak_bytes()/cost()";
      (void)mechanism.state_bytes(*cell);
      (void)mechanism.predicted_peak_bytes(*cell);
      (void)mechanism.cost(*cell);
    } catch (const std::exception& error) {
      throw UsageError(fmt::format("--plugin {}: the self-check of mechanism {} failed: {} threw on the cell {}: {}; "
                                   "nothing was measured",
                                   plugin_path, info.id, step, where, error.what()));
    } catch (...) {
      throw UsageError(fmt::format("--plugin {}: the self-check of mechanism {} failed: {} threw a non-standard "
                                   "exception on the cell {}; nothing was measured",
                                   plugin_path, info.id, step, where));
    }
  }
}

}  // namespace arch_bench
