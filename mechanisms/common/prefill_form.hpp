#pragma once
// Which form a CPU prefill takes: the recurrence token by token, or the chunk form. The chunk form
// does no fewer FLOPs than the recurrence for these state sizes (linear attention: 4 d^2 of
// products per token plus the intra-chunk 2 C d, against the recurrence's 4 d^2; RWKV-7: ~4 d^2 of
// inter-chunk products against ~4.5 d^2 updates); what it buys is register-tiled products and one
// pass over the state per chunk instead of per token. When a head's fp32 state fits in L1 with
// room to spare (16 KiB: d = 64) the per-token passes cost nothing extra and the recurrence, whose
// vector loops run near the FMA peak, wins: measured on a 2-core Zen 3 (AVX2) at d = 64, T = 2048,
// see linear_attention/cpu.hpp and rwkv/rwkv7/cpu.hpp. A wider state streams from L2 every token,
// and the chunk form takes over.
#include <cstdint>
#include "core/kernel_helpers.hpp"

namespace arch_bench {
ARCH_BENCH_KERNEL_HELPERS_BEGIN

inline constexpr std::int64_t kRecurrentPrefillStateElements = 64 * 64;  // 16 KiB of fp32 per head

inline bool recurrent_prefill_pays(std::int64_t state_elements_per_head) {
  return state_elements_per_head <= kRecurrentPrefillStateElements;
}

ARCH_BENCH_KERNEL_HELPERS_END
}  // namespace arch_bench
