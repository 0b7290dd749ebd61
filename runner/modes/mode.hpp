#pragma once
// A mode is a named comparison preset: its baseline and candidates ("arms"), its default workload
// matrix and identity, and its decision rule. Modes are listed in runner/modes/registry.cpp.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/pipeline/run_result.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

// One mechanism configuration measured over the whole matrix.
struct Arm {
  std::string mechanism;
  Role role = Role::candidate;
  std::string variant;       // e.g. "m=64"; empty when the mechanism appears once
  MechanismOptions options;  // the workload's options with this arm's overrides applied
  // Its own shape, where it differs from the workload's (a model preset's layer types: runner/models/);
  // 0: the workload's --query-heads / --head-dim.
  std::int64_t heads = 0, head_dim = 0;
};

struct ModeDefaults {
  std::string experiment;   // result file stem: results/<experiment>_<run_label>.json
  std::string semantic_id;
  std::string workload_id;
  Workload workload;        // default matrix and measurement settings
};

class Mode {
 public:
  virtual ~Mode() = default;
  virtual std::string id() const = 0;
  virtual std::string title() const = 0;  // one line for `arch-bench list`
  virtual ModeDefaults defaults() const = 0;
  virtual std::vector<Arm> arms(const Workload& workload) const = 0;
  // The verdict over all rows of the run (rows of every arm, phase and length).
  virtual Decision decide(std::span<const Row> rows, const Workload& workload) const = 0;
  // Top-level report keys a mode adds beside the measured rows (landscape: `capacity`); an object
  // whose keys are merged into the report, or null.
  virtual nlohmann::json report_extras(std::span<const Row> rows, const Workload& workload) const {
    (void)rows;
    (void)workload;
    return nullptr;
  }
};

// What a built-in mode declares about itself, as data: its id, its line in `arch-bench list` and the
// defaults a run starts from.
struct ModeIdentity {
  std::string id;
  std::string title;
  ModeDefaults defaults;
};

// A mode whose identity is fixed when it is made (every built-in mode): it states the data once and
// writes only its arms and its decision.
class DeclaredMode : public Mode {
 public:
  explicit DeclaredMode(ModeIdentity identity) : identity_(std::move(identity)) {}
  std::string id() const final { return identity_.id; }
  std::string title() const final { return identity_.title; }
  ModeDefaults defaults() const final { return identity_.defaults; }

 private:
  ModeIdentity identity_;
};

std::span<const std::unique_ptr<Mode>> all_modes();
const Mode* find_mode(std::string_view id);

}  // namespace arch_bench
