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

class MambaScanMode final : public FixedStateMode {
 public:
  MambaScanMode()
      : FixedStateMode(
            ModeIdentity{"mamba_scan",
                         "explicit K/V history (softmax_kv) vs Mamba selective scan (mamba, fixed d_inner x N state)",
                         // mamba: d_inner = heads x head_dim = 512 channels. One warmup/repeats setting serves
                         // every cell, and the baseline's prefill at L = 8192 (an L^2 attention, about 69
                         // GFLOP) takes 5-10 s per call on a 2-core host: 2 + 15 calls keep the default run to
                         // about three minutes there while every row still gets 15 samples for `arch-bench diff`.
                         standard_mode_defaults("mamba_selective_scan", "ARCH-MAMBA-SELECTIVE-SCAN",
                                                "arch-mamba-scan-v1", {Phase::decode, Phase::prefill},
                                                /*warmup=*/2, /*repeats=*/15)},
            "mamba", "accept_fixed_state_selective_scan") {}

  Decision decide(std::span<const Row> rows, const Workload& workload) const override {
    Decision decision = FixedStateMode::decide(rows, workload);
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
