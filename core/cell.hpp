#pragma once
// One point of the workload matrix for one mechanism: the unit that is planned, measured and
// reported as one row.
#include <cstdint>
#include <string>

#include "core/checked_size.hpp"
#include "core/dtype.hpp"
#include "core/options.hpp"

namespace arch_bench {

enum class Phase { decode, prefill };
std::string phase_name(Phase phase);

struct Cell {
  std::string mechanism;
  Phase phase = Phase::decode;
  std::int64_t sequence_length = 0;  // decode: tokens already in context; prefill: tokens processed
  std::int64_t batch = 1;
  std::int64_t heads = 8;
  std::int64_t head_dim = 64;
  DType dtype = DType::bfloat16;
  MechanismOptions options;  // by key; an absent key reads as its spec's default (core/options.hpp)

  // batch * heads: the number of independent (sequence, head) problems (SizeOverflow when it
  // does not fit in 64 bits).
  std::int64_t batch_heads() const { return checked_mul(batch, heads); }
};

}  // namespace arch_bench
