#pragma once
// The mechanism contract (docs/design.md, "Mechanism contract"): what a mechanism states about itself
// and what it implements. A mechanism is one folder under mechanisms/: its mechanism.cpp registers
// it (ARCH_BENCH_REGISTER_MECHANISM, mechanisms/registry.hpp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backends/backend.hpp"
#include "core/cell.hpp"
#include "core/options.hpp"
#include "mechanisms/process_bytes.hpp"

namespace arch_bench {

class ConformanceAdapter;  // mechanisms/common/conformance_adapter.hpp
class CapacityProbe;       // mechanisms/capacity.hpp

enum class StateKind { explicit_history, fixed_state };
std::string state_kind_name(StateKind kind);

// Work of one timed unit (one decode step or one prefill), for roofline numbers: the minimum bytes
// the unit must move to/from memory and the floating-point operations it performs.
struct Cost {
  double bytes_moved = 0;
  double flops = 0;
};

// Outcome of comparing a mechanism's outputs with its fp64 reference on the same inputs.
struct Accuracy {
  bool output_finite = true;
  double max_abs_error = 0;
  double max_rel_error = 0;        // max |out - ref| / max |ref|, over the rows checked
  std::int64_t rows_checked = 0;   // output rows (tokens x heads) compared
  // Rows whose normaliser phi(q).z was <= 0 or not finite (performer's trig features can give
  // one); such rows are counted, not trapped.
  std::int64_t nonpositive_denominators = 0;
  // Approximating mechanisms (performer): error of the outputs against exact softmax attention on
  // the same inputs; relative L2 over the compared rows, and max |out - exact|.
  std::optional<double> approx_rel_l2_vs_softmax;
  std::optional<double> approx_max_abs_vs_softmax;
};

// A mechanism bound to one cell on one backend, with its inputs and state already in place
// (for decode: the context of `sequence_length` tokens is in the KV cache / recurrent state).
class PreparedCell {
 public:
  PreparedCell() = default;
  PreparedCell(const PreparedCell&) = delete;  // owns device buffers
  PreparedCell& operator=(const PreparedCell&) = delete;
  virtual ~PreparedCell() = default;

  // The timed unit: one decode_step (the token at position L) or one causal prefill.
  virtual void run() = 0;
  // Compares the outputs of the last run() with the fp64 reference. The harness calls it after
  // exactly one run() on a freshly prepared cell, before warmup.
  virtual Accuracy check() const = 0;
  // The buffers the timed unit touches, so that a cold sample can evict them first.
  virtual std::vector<ByteSpan> buffers() const = 0;
  // CPU cells with a hand-written kernel set chosen at run time: the ISA run() enters, e.g.
  // "avx2 (run-time dispatch)" (mechanisms/common/cpu_isa.hpp). Empty (the default) states
  // nothing: a built-in mechanism's row then records the build's target ISA, a plugin's null.
  virtual std::string cpu_kernel_isa() const { return {}; }
};

struct MechanismInfo {
  std::string id;           // registry key, e.g. "softmax_kv"
  std::string title;        // one line for `arch-bench list`
  StateKind state_kind;
  std::vector<std::string> backends;  // backends with an implementation
};

class Mechanism {
 public:
  virtual ~Mechanism() = default;
  virtual const MechanismInfo& info() const = 0;
  // Why this mechanism cannot run `cell` (e.g. a head_dim it cannot take), or nullopt.
  virtual std::optional<std::string> unsupported(const Cell& cell) const = 0;
  // Why this mechanism's kernels on `backend` ("cpu", "cuda") cannot run `cell` although the
  // mechanism can (a GPU kernel's head_dim alignment, say), or nullopt. Checked when the plan is built.
  virtual std::optional<std::string> unsupported_on(const Cell& cell, const std::string& backend) const {
    (void)cell;
    (void)backend;
    return std::nullopt;
  }
  // Bytes of the state that carries the context (KV cache or recurrent state) for the cell.
  virtual std::int64_t state_bytes(const Cell& cell) const = 0;
  // Predicted peak bytes of all backend buffers for the cell (state + inputs + outputs +
  // workspace); preflight compares it with free memory.
  virtual std::int64_t predicted_peak_bytes(const Cell& cell) const = 0;
  // Predicted bytes the whole process gains while it prepares, runs and checks the cell: the backend
  // buffers plus what lives outside the allocator (the fp32 inputs drawn for the check, a decode
  // cell's staged context, the fp64 reference's results; mechanisms/process_bytes.hpp). `run`
  // compares it with the memory available before the first allocation, and each row reports it.
  // The default fits a mechanism that draws q, k, v with make_attention_inputs, stages four
  // [batch_heads, L, head_dim] tensors for a decode cell's context and checks head by head;
  // override it when the cell holds more (more input streams, every head's reference at once).
  virtual std::int64_t predicted_process_bytes(const Cell& cell) const {
    return ProcessBytes{predicted_peak_bytes(cell), drawn_attention_bytes(cell, 3), staged_context_bytes(cell, 4),
                        reference_head_bytes(cell, 6)}
        .total();
  }
  virtual Cost cost(const Cell& cell) const = 0;
  virtual std::unique_ptr<PreparedCell> prepare(const Cell& cell, std::uint64_t seed,
                                                Backend& backend) const = 0;
  // What runs this mechanism's kernels and reference on inputs read from .npy files
  // (`arch-bench conformance`), or nullptr when it has no adapter yet.
  virtual const ConformanceAdapter* conformance() const { return nullptr; }
  // The options this mechanism reads, declared once (core/options.hpp): the CLI's flags, the
  // report's rows, shards, conformance and the report schema are built from them. Beside them every
  // mechanism runs with the harness's own (qk_scale: mechanisms/option_catalog.hpp).
  virtual std::vector<OptionSpec> option_specs() const { return {}; }
  // The options this mechanism runs with when a mode takes it as it is, with the workload's options
  // (the landscape): a value one of its specs does not take (linear attention's elu for performer's
  // feature map, performer's trig for linear attention's) is dropped, so the spec's default runs.
  virtual MechanismOptions arm_options(const MechanismOptions& workload) const {
    MechanismOptions options = workload;
    for (const OptionSpec& spec : option_specs()) {
      if (const OptionValue* value = options.find(spec.key); value != nullptr && !spec.accepts(*value)) {
        options.erase(spec.key);
      }
    }
    return options;
  }
  // The state-capacity probe (mechanisms/capacity.hpp) for a cell with these options (feature map,
  // state size, ...), or nullptr when the mechanism has none.
  virtual const CapacityProbe* capacity_probe(const MechanismOptions& options) const {
    (void)options;
    return nullptr;
  }
};

}  // namespace arch_bench
