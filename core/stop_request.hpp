#pragma once
// A stop asked for by SIGINT/SIGTERM, visible to every layer. The signal handler sets it
// (runner/cli/signals.cpp, async-signal-safe: one lock-free atomic); the measuring loops poll it
// between samples and cells (runner/pipeline/interrupt.hpp), and the long set-up loops poll it too:
// drawing a big cell's inputs, staging its context and checking it against the fp64 reference take
// tens of seconds at a batch of 10^5, and a run that ignores SIGTERM that long gets killed with
// nothing written (issue 42, item 6).
#include <cstdint>

namespace arch_bench {

// True once a stop was requested; `stop_signal()` says which signal (0 when none).
bool stop_requested();
int stop_signal();
// Called from a signal handler: only touches a lock-free atomic. Returns whether this was the first
// request (one compare-and-swap): two signals handled at once on two threads of the process must not
// both take themselves for the first.
bool request_stop(int signal_number);
// For tests and for commands that handle a request and go on.
void clear_stop_request();

// Throws CellFailure("interrupted") when a stop was requested; `during` completes "interrupted by
// signal N while ..." ("drawing the inputs"). Only for serial code: an exception must not leave an
// OpenMP parallel region, so parallel loops poll between their regions.
void throw_if_stop_requested(const char* during);

// How many elements a serial set-up loop handles between two polls: about a millisecond of work
// (a normal draw is ~10 ns), so a stop is seen within ~1 ms and the poll costs nothing measurable.
inline constexpr std::int64_t kStopPollElements = std::int64_t{1} << 16;

}  // namespace arch_bench
