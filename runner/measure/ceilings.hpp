#pragma once
// The machine's ceilings, measured in the same run as the cells so that "fraction of peak" is
// against this machine in this state (governor, neighbours, thread count), not a datasheet.
#include <cstddef>
#include <cstdint>

#include "runner/pipeline/run_result.hpp"

namespace arch_bench {

// Streaming-read and STREAM-triad bandwidth over arrays far larger than the last-level cache, and
// fp32 FMA throughput, each with `threads` OpenMP threads, best of a few passes. About 1 s.
// Throws std::invalid_argument when threads < 1.
Ceilings measure_ceilings(int threads);

// The read ceiling's inner loop, exposed for its test: the sum of data[begin, end), where begin and
// end are multiples of read_granule_floats(), read as a few streams walked in lockstep.
float streaming_read_sum(const float* data, std::size_t begin, std::size_t end);
std::size_t read_granule_floats();

// Bytes of each of the three stream arrays for a host whose largest cache is llc_bytes (0:
// unknown) and whose memory is memory_bytes (0: unknown): 4 x LLC up to 512 MiB, at least one LLC,
// at least 128 MiB, and the three at most a quarter of the memory (never below the 128 MiB floor).
std::int64_t stream_array_bytes(std::int64_t llc_bytes, std::int64_t memory_bytes);

// A CPU run whose cells took at least this long reads its ceilings a second time after them. The
// reading costs about a second; on a shared host, a steal or a neighbour's burst during the only
// reading lowers every fraction of the run (a 2-vCPU Zen 1 run read 39.6 GFLOP/s against 71-80 in
// the runs around it, and its rows then claimed up to 133% of the FMA peak).
inline constexpr double kSecondCeilingReadingAfterSeconds = 10.0;

// Whether a run takes that second reading: CPU runs only, not when interrupted, and only when the
// cells ran at least kSecondCeilingReadingAfterSeconds (short runs would pay for it in proportion).
bool wants_second_ceiling_reading(bool gpu, bool interrupted, double cells_seconds);

// `before` with the reading `after` folded in: each ceiling the larger of the two, as a ceiling is
// what the machine can do and interference only lowers a reading. Both readings go to `readings`.
Ceilings with_second_reading(Ceilings before, const Ceilings& after);

}  // namespace arch_bench
