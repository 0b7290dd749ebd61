#pragma once
// How far a CPU replay of a chunked kernel is from its fp64 reference, with the sequence replayed in
// pieces (each continuing from the state the last left): the measure the RWKV replay tests share.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace arch_bench::testing {

struct ReplayErrors {
  double output = 0, state = 0;  // max |replay - ref| / max |ref|
};

// `replay(bh, first, count, state)` replays tokens [first, first + count) of head bh from `state`
// (dim x dim, updated in place) and returns its outputs [count][dim]; `reference(bh)` is head bh's
// fp64 result ({outputs [tokens][dim], state}). Every head is replayed from a zero state in pieces
// cut at `cuts` (then at `tokens`); its outputs must be finite. The errors are over every head's
// outputs and final states; `transposed_state`: the replay holds the state as the transpose of the
// reference's ([key][value] against [value][key]).
template <class Replay, class Reference>
ReplayErrors chunk_replay_errors(std::int64_t batch_heads, std::int64_t tokens, std::int64_t dim,
                                 std::vector<std::int64_t> cuts, bool transposed_state, Replay replay,
                                 Reference reference) {
  double out_diff = 0, out_scale = 0, state_diff = 0, state_scale = 0;
  cuts.push_back(tokens);
  for (std::int64_t bh = 0; bh < batch_heads; ++bh) {
    const auto ref = reference(bh);
    std::vector<float> state(static_cast<std::size_t>(dim * dim), 0.0f), out;
    std::int64_t first = 0;
    for (const std::int64_t cut : cuts) {
      const std::vector<float> piece = replay(bh, first, cut - first, state);
      out.insert(out.end(), piece.begin(), piece.end());
      first = cut;
    }
    EXPECT_TRUE(std::ranges::all_of(out, [](float x) { return std::isfinite(x); }));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out_diff = std::fmax(out_diff, std::fabs(out[i] - ref.outputs.data[i]));
      out_scale = std::fmax(out_scale, std::fabs(ref.outputs.data[i]));
    }
    for (std::int64_t i = 0; i < dim; ++i) {
      for (std::int64_t j = 0; j < dim; ++j) {
        const double expected = ref.state.data[static_cast<std::size_t>(i * dim + j)];
        const float replayed = state[static_cast<std::size_t>(transposed_state ? j * dim + i : i * dim + j)];
        state_diff = std::fmax(state_diff, std::fabs(replayed - expected));
        state_scale = std::fmax(state_scale, std::fabs(expected));
      }
    }
  }
  return {out_diff / out_scale, state_diff / state_scale};
}

}  // namespace arch_bench::testing
