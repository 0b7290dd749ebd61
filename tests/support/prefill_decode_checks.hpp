#pragma once
// The checks every fixed-state mechanism's CPU kernels meet the same way: a bf16 prefill against the
// fp64 reference, and a decode step against the prefill it continues.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.hpp"
#include "tests/support/mechanism_fixtures.hpp"

namespace arch_bench::testing {

// The bf16 prefill's outputs, chunkwise and recurrent, are within the bf16 tolerance of the fp64
// `reference`, and the chunkwise ones really are rounded to bf16 (the comparison is not vacuous).
inline void expect_bf16_prefills_within_tolerance(const std::vector<float>& chunked, const std::vector<float>& recurrent,
                                                  const std::vector<float>& reference) {
  const double chunked_error = relative_max_error(chunked, reference);
  EXPECT_LT(chunked_error, dtype_tolerance(DType::bfloat16));
  EXPECT_LT(relative_max_error(recurrent, reference), dtype_tolerance(DType::bfloat16));
  EXPECT_GT(chunked_error, 1e-6);
}

// The chunkwise prefill computes what the token-by-token recurrence does: `prefill(chunkwise)`, run
// both ways over the same inputs, returns the same outputs and final state ({out, state, ...}) to 1e-5.
template <class Prefill>
void expect_chunkwise_equals_recurrent(Prefill prefill) {
  const auto chunked = prefill(true), recurrent = prefill(false);
  EXPECT_LT(relative_max_error(chunked.out, recurrent.out), 1e-5);
  EXPECT_LT(relative_max_error(chunked.state, recurrent.state), 1e-5);
}

// `prefill(in)` runs the fp32 prefill over all of `in` from a zero state; `decode_after(in, t, token)`
// prefills tokens [0, t) of `in` and then decodes `token` (token t); both return {out, state, ...}.
// The decode step's output equals the prefill's row t and both end in the same state, at 2 heads of
// each width in `widths` over t + 1 = 131 tokens.
template <class Prefill, class DecodeAfter>
void expect_decode_at_position_t_equals_row_t_of_prefill(std::initializer_list<std::int64_t> widths, Prefill prefill,
                                                         DecodeAfter decode_after) {
  const std::int64_t t = 130;
  for (const std::int64_t dim : widths) {
    SCOPED_TRACE("head_dim " + std::to_string(dim));
    const AttentionInputs in = make_attention_inputs(small_cell(2, dim, t, DType::float32), t + 1, 31);
    const auto full = prefill(in);
    const DecodeToken token = decode_token(in, t, full.out);
    const auto step = decode_after(in, t, token);
    EXPECT_LT(relative_max_error(step.out, token.expected), 1e-5);
    EXPECT_LT(relative_max_error(step.state, full.state), 1e-5);  // the same state after t + 1 tokens
  }
}

// A long fp32 prefill of one head, its outputs `out` and final `state`, is finite throughout, and
// its last 64 rows of `dim` are within 1e-4 of the fp64 `reference`: the chunked decay powers neither
// overflow nor lose their accuracy at the decays' extremes.
inline void expect_finite_with_accurate_last_rows(const std::vector<float>& out, const std::vector<float>& state,
                                                  const std::vector<float>& reference, std::int64_t dim) {
  const auto finite = [](float x) { return std::isfinite(x); };
  ASSERT_TRUE(std::all_of(out.begin(), out.end(), finite));
  ASSERT_TRUE(std::all_of(state.begin(), state.end(), finite));
  const std::ptrdiff_t tail = 64 * dim;
  const std::vector<float> last_out(out.end() - tail, out.end()), last_reference(reference.end() - tail, reference.end());
  EXPECT_LT(relative_max_error(last_out, last_reference), 1e-4);
}

}  // namespace arch_bench::testing
