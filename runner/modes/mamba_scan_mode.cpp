// Mode `mamba_scan`: explicit K/V history (softmax_kv, baseline) against Mamba's selective scan
// (mamba, candidate), in decode and prefill. The question is the one of linear_recurrence (does a
// fixed-size state replace a history that grows with L, with correct outputs?) asked of a
// selective state space layer, plus from which length its prefill, a scan linear in L, beats the
// baseline's quadratic attention.
#include <memory>

#include "runner/modes/linear_recurrence.hpp"
#include "runner/modes/mode.hpp"
#include "runner/modes/standard_defaults.hpp"
#include "mechanisms/mamba/options.hpp"

namespace arch_bench {

namespace {

class MambaScanMode final : public Mode {
 public:
  std::string id() const override { return "mamba_scan"; }
  std::string title() const override {
    return "explicit K/V history (softmax_kv) vs Mamba selective scan (mamba, fixed d_inner x N state)";
  }

  ModeDefaults defaults() const override {
    // mamba: d_inner = heads x head_dim = 512 channels.
    ModeDefaults defaults = standard_mode_defaults("mamba_selective_scan", "ARCH-MAMBA-SELECTIVE-SCAN",
                                                   "arch-mamba-scan-v1", {Phase::decode, Phase::prefill});
    // One setting serves every cell, and the baseline's prefill at L = 8192 (an L^2 attention,
    // about 69 GFLOP) takes 5-10 s per call on a 2-core host: 2 + 15 calls keep the default run to
    // about three minutes there while every row still gets 15 samples for `arch-bench diff`.
    defaults.workload.warmup = 2;
    defaults.workload.repeats = 15;
    return defaults;
  }

  std::vector<Arm> arms(const Workload& workload) const override {
    return {Arm{"softmax_kv", Role::baseline, "", workload.options},
            Arm{"mamba", Role::candidate, "", workload.options}};
  }

  Decision decide(std::span<const Row> rows, const Workload& workload) const override {
    const std::vector<Arm> both = arms(workload);
    Decision decision =
        decide_fixed_state(rows, workload, both[0], both[1], "accept_fixed_state_selective_scan");
    // The prefill crossover by name (decide_fixed_state files it under crossover_length.prefill;
    // null when prefill was not measured or the scan never becomes and stays cheaper).
    const nlohmann::json& by_phase = decision.details["crossover_length"];
    decision.details["prefill_crossover_length"] =
        by_phase.contains("prefill") ? by_phase["prefill"] : nlohmann::json(nullptr);
    decision.details["state_size"] = mamba_state_size_option().integer(workload.options);
    decision.details["d_inner"] = workload.heads * workload.head_dim;
    return decision;
  }
};

}  // namespace

std::unique_ptr<Mode> make_mamba_scan_mode() { return std::make_unique<MambaScanMode>(); }

}  // namespace arch_bench
