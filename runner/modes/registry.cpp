#include "runner/modes/mode.hpp"

#include <vector>

#include "runner/modes/linear_recurrence.hpp"

namespace arch_bench {

std::unique_ptr<Mode> make_performer_mode();  // runner/modes/performer_mode.cpp
std::unique_ptr<Mode> make_mamba_scan_mode();  // runner/modes/mamba_scan_mode.cpp
std::unique_ptr<Mode> make_landscape_mode();   // runner/modes/landscape_mode.cpp

namespace {
std::vector<std::unique_ptr<Mode>> make_modes() {
  std::vector<std::unique_ptr<Mode>> modes;
  // The one list of modes: add a line here for a new runner/modes/<id>_mode.cpp.
  modes.push_back(make_linear_recurrence_mode());
  modes.push_back(make_mamba_scan_mode());
  modes.push_back(make_performer_mode());
  modes.push_back(make_landscape_mode());
  return modes;
}
}  // namespace

std::span<const std::unique_ptr<Mode>> all_modes() {
  static const std::vector<std::unique_ptr<Mode>> modes = make_modes();
  return modes;
}

const Mode* find_mode(std::string_view id) {
  for (const auto& mode : all_modes()) {
    if (mode->id() == id) return mode.get();
  }
  return nullptr;
}

}  // namespace arch_bench
