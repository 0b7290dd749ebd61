#pragma once
// sliding_window's decode state: per K/V head a ring of slots rows of k and v, token p in slot
// p % slots. It holds the last `slots` tokens in rotated order, which the decode step may read as they
// lie: softmax over a set of keys does not depend on their order.
#include <algorithm>
#include <cstdint>

namespace arch_bench {

// Slots of the ring a decode step at position `position` (context of `position` tokens, plus the new
// one) attends over: the window, or every token while the sequence is shorter.
inline std::int64_t ring_slots(std::int64_t position, std::int64_t window) { return std::min(position + 1, window); }

// Tokens of the context a decode step at `position` finds in the ring (the K/V state): min(L, W).
inline std::int64_t ring_context_tokens(std::int64_t position, std::int64_t window) {
  return std::min(position, window);
}

}  // namespace arch_bench
