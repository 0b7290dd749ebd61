#pragma once
// Building blocks of the modes' decision rules, shared so that every mode judges "fixed state",
// "correct" and "crossover" the same way.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runner/pipeline/run_result.hpp"
#include "runner/pipeline/workload.hpp"

namespace arch_bench {

// Rows of one arm (mechanism + variant) in one phase, ordered by sequence length.
std::vector<const Row*> arm_rows(std::span<const Row> rows, const std::string& mechanism,
                                 const std::string& variant, Phase phase);

// Rows whose status is not ok, or whose outputs are not finite or outside tolerance: one reason
// string each (empty when every row is healthy).
std::vector<std::string> unhealthy_row_reasons(std::span<const Row> rows);

// True when every row has the same state_bytes.
bool state_is_fixed(const std::vector<const Row*>& rows);
// True when the state grows with L but has reached its bound by the longest measured length (a
// sliding window of W tokens at L >= W): the state bytes never fall as L grows, and the mechanism's
// own state model gives the same bytes at twice the longest length. Such a mechanism keeps a fixed
// state from its bound on, which is what a fixed-state candidate is judged for; a KV cache, whose
// bytes double with L, is not bounded. False for rows of a mechanism that is not registered.
bool state_is_bounded(const std::vector<const Row*>& rows);
// True when state_bytes / sequence_length is the same for every row (exact proportionality, as
// for a KV cache) and the lengths are not all equal.
bool state_grows_with_length(const std::vector<const Row*>& rows);

// True when a row's outputs are not finite (a failed "non_finite_output" row, or an ok row whose
// check saw a NaN/inf): its timing measured garbage and it decides nothing.
bool output_not_finite(const Row& row);

// When the baseline's outputs are not finite, the inputs, not the candidate, are at fault (e.g.
// --qk-scale 1e30 overflows every logit): the reason, naming the input options; else nullopt.
// No verdict about the candidate can be drawn from such a run.
std::optional<std::string> invalid_inputs_reason(std::span<const Row> rows, const Workload& workload);

// median(candidate) / median(baseline) per sequence length (lengths present in both), from rows
// that are ok with finite outputs only: a failed row has no timing worth comparing.
std::map<std::int64_t, double> time_ratio_by_length(const std::vector<const Row*>& baseline,
                                                    const std::vector<const Row*>& candidate);
// The smallest length from which the candidate's median step is below the baseline's at that and
// every larger measured length; nullopt when the candidate never becomes (and stays) cheaper.
std::optional<std::int64_t> crossover_length(const std::map<std::int64_t, double>& ratio_by_length);

// The verdicts every mode reaches before its own rule, in this order: "inconclusive" when the
// inputs are out of range (invalid_inputs_reason: the baseline overflows too, so no kernel is at
// fault; `inputs_advice` says how to bring them in); "reject_candidate_outputs_incorrect" when a
// `decisive` row `of_candidate` measured ok outside its tolerance (`fix_advice` says which kernel to
// fix); "inconclusive" when `decisive` rows are otherwise `unhealthy` (failed or skipped). True when
// one applies (`decision` then holds it); the unhealthy rows' reasons are the caller's to list.
bool decide_unusable_run(Decision& decision, std::span<const Row> rows, const Workload& workload,
                         std::span<const Row> decisive, bool unhealthy,
                         const std::function<bool(const Row&)>& of_candidate, const std::string& inputs_advice,
                         const std::string& fix_advice);

std::string row_label(const Row& row);  // "linear_attention decode L=2048" (+ variant)

}  // namespace arch_bench
