#include "runner/pipeline/plan.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/checked_size.hpp"
#include "mechanisms/registry.hpp"
#include "core/errors.hpp"

namespace arch_bench {

std::int64_t Plan::max_predicted_peak_bytes() const {
  std::int64_t peak = 0;
  for (const PlannedCell& planned : cells) peak = std::max(peak, planned.predicted_peak_bytes);
  return peak;
}

std::int64_t Plan::max_predicted_process_bytes() const {
  std::int64_t most = 0;
  for (const PlannedCell& planned : cells) most = std::max(most, planned.predicted_process_bytes);
  return most;
}

void validate_workload(const Workload& w) {
  if (w.sequence_lengths.empty()) throw UsageError("--sequence-lengths is empty; give e.g. 512,2048,8192");
  for (std::int64_t length : w.sequence_lengths) {
    if (length <= 0) throw UsageError(fmt::format("--sequence-lengths: {} is not a positive length", length));
  }
  if (w.batch <= 0) throw UsageError(fmt::format("--batch must be positive (got {})", w.batch));
  if (w.heads <= 0) throw UsageError(fmt::format("--query-heads must be positive (got {})", w.heads));
  if (w.head_dim <= 0) throw UsageError(fmt::format("--head-dim must be positive (got {})", w.head_dim));
  if (w.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0 (got {})", w.warmup));
  if (w.repeats <= 0) throw UsageError(fmt::format("--repeats must be >= 1 (got {}): a cell needs samples", w.repeats));
  if (w.rounds < 1 || w.rounds > w.repeats) {
    throw UsageError(fmt::format("--rounds must be between 1 and --repeats ({}): every round takes at least one sample "
                                 "of every cell (got {})",
                                 w.repeats, w.rounds));
  }
  if (w.threads <= 0) throw UsageError(fmt::format("--threads must be positive (got {})", w.threads));
  if (w.phases.empty()) throw UsageError("--phase is empty; use decode, prefill or both");
  // A cell given twice would be measured twice and reported as two rows of one cell, which
  // `arch-bench diff` cannot pair.
  auto refuse_duplicates = [](const char* option, const auto& values, auto name) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (values[i] == values[j]) {
          throw UsageError(fmt::format("{}: {} is given twice; each value is measured once, so list it once", option,
                                       name(values[i])));
        }
      }
    }
  };
  auto number = [](std::int64_t value) { return std::to_string(value); };
  refuse_duplicates("--sequence-lengths", w.sequence_lengths, number);
  refuse_duplicates("--phase", w.phases, [](Phase phase) { return phase_name(phase); });
  for (const auto& [key, values] : w.axes) {
    refuse_duplicates(OptionSpec{.key = key}.flag().c_str(), values, option_value_text);
  }
}

namespace {
std::string cell_shape(const Cell& cell) {
  return fmt::format("{} {} with --sequence-lengths {} --batch {} --query-heads {} --head-dim {}", cell.mechanism,
                     phase_name(cell.phase), cell.sequence_length, cell.batch, cell.heads, cell.head_dim);
}

struct CellBytes {
  std::int64_t state = 0, peak = 0, process = 0;
};

// The cell's state, predicted peak and process bytes, refused (UsageError naming the options) when a size
// overflows 64 bits or exceeds what any machine can address: a wrapped-around size would pass every
// memory check and then fail, or crash, after the ceilings were measured.
CellBytes checked_cell_bytes(const Mechanism& mechanism, const Cell& cell) {
  std::int64_t state = 0, peak = 0, process = 0;
  try {
    // Every mechanism holds at least one value per (batch, head, token, feature): bounding this
    // first keeps the size formulas, checked or not, far from overflow.
    const std::int64_t elements = checked_product(cell.batch, cell.heads, cell.head_dim,
                                                  checked_add(cell.sequence_length, 1));
    if (checked_mul(elements, static_cast<std::int64_t>(dtype_bytes(cell.dtype))) > kMaxAddressableBytes) {
      throw SizeOverflow("too large");
    }
    state = mechanism.state_bytes(cell);
    peak = mechanism.predicted_peak_bytes(cell);
    process = mechanism.predicted_process_bytes(cell);
  } catch (const SizeOverflow&) {
    throw UsageError(fmt::format("{}: the cell's sizes exceed what any machine can address (more than 2^48 bytes); "
                                 "reduce --sequence-lengths, --batch, --query-heads or --head-dim",
                                 cell_shape(cell)));
  }
  if (state < 0 || peak < 0 || process < 0 || state > kMaxAddressableBytes || peak > kMaxAddressableBytes ||
      process > kMaxAddressableBytes) {
    throw UsageError(fmt::format("{}: predicted peak {} bytes (process {} bytes) exceeds what any machine can address "
                                 "(2^48 bytes); reduce --sequence-lengths, --batch, --query-heads or --head-dim",
                                 cell_shape(cell), peak, process));
  }
  return {state, peak, process};
}
}  // namespace

// The mode's arms with the workload's every-mode axes (OptionSpec::every_mode_axis: kv_heads) applied:
// an arm of a mechanism that declares such a key, and whose mode did not set it, runs once per value of
// the list; with two or more values each copy's variant names its value ("kv_heads=2").
std::vector<Arm> arms_over_axes(const Mode& mode, const Workload& workload) {
  std::vector<Arm> arms = mode.arms(workload);
  for (const auto& axis : workload.axes) {
    const std::string& key = axis.first;  // named, not a structured binding: lambdas capture it (clang 14)
    const std::vector<OptionValue>& values = axis.second;
    if (values.empty()) continue;
    std::vector<Arm> expanded;
    for (const Arm& arm : arms) {
      const Mechanism* mechanism = find_mechanism(arm.mechanism);
      const std::vector<OptionSpec> specs = mechanism ? mechanism->option_specs() : std::vector<OptionSpec>{};
      const auto spec = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.key == key; });
      if (spec == specs.end() || !spec->every_mode_axis || arm.options.find(key) != nullptr) {
        expanded.push_back(arm);
        continue;
      }
      for (const OptionValue& value : values) {
        Arm copy = arm;
        copy.options.set(key, value);
        if (values.size() > 1) {
          const std::string label = fmt::format("{}={}", key, option_value_text(value));
          copy.variant = copy.variant.empty() ? label : copy.variant + " " + label;
        }
        expanded.push_back(std::move(copy));
      }
    }
    arms = std::move(expanded);
  }
  return arms;
}

Plan build_plan(const Mode& mode, const Workload& workload, const std::string& backend) {
  validate_workload(workload);
  Plan plan;
  const std::vector<Arm> arms = arms_over_axes(mode, workload);
  for (Phase phase : workload.phases) {
    for (std::int64_t length : workload.sequence_lengths) {
      for (const Arm& arm : arms) {
        const Mechanism* mechanism = find_mechanism(arm.mechanism);
        if (mechanism == nullptr) {
          throw UsageError(fmt::format("mode {} names unknown mechanism '{}'", mode.id(), arm.mechanism));
        }
        const auto& backends = mechanism->info().backends;
        if (std::find(backends.begin(), backends.end(), backend) == backends.end()) {
          throw UsageError(fmt::format("mechanism {} has no {} implementation (it has: {})", arm.mechanism,
                                       backend, fmt::join(backends, ", ")));
        }
        Cell cell{arm.mechanism, phase, length, workload.batch, arm.heads > 0 ? arm.heads : workload.heads,
                  arm.head_dim > 0 ? arm.head_dim : workload.head_dim, workload.dtype, arm.options};
        if (auto why = mechanism->unsupported(cell)) {
          throw UsageError(fmt::format("{} cannot run this workload: {}", arm.mechanism, *why));
        }
        const CellBytes bytes = checked_cell_bytes(*mechanism, cell);
        if (auto why = mechanism->unsupported_on(cell, backend)) {
          throw UsageError(fmt::format("{} on the {} backend cannot run this workload: {}", arm.mechanism, backend, *why));
        }
        plan.cells.push_back({arm, cell, mechanism, bytes.state, bytes.peak, bytes.process});
      }
    }
  }
  return plan;
}

}  // namespace arch_bench
