#pragma once
// The machine's ceilings, measured in the same run as the cells so that "fraction of peak" is
// against this machine in this state (governor, neighbours, thread count), not a datasheet.
#include "runner/core/run_result.hpp"

namespace arch_bench {

// Streaming-read and STREAM-triad bandwidth over arrays far larger than the last-level cache, and
// fp32 FMA throughput, each with `threads` OpenMP threads, best of a few passes. About 1 s.
// Throws std::invalid_argument when threads < 1.
Ceilings measure_ceilings(int threads);

}  // namespace arch_bench
