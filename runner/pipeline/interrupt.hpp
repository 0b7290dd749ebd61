#pragma once
// A SIGINT/SIGTERM during a run is a request to stop measuring, not a crash: the signal handler
// sets this flag (async-signal-safe), the measuring loops poll it between samples and cells, and the
// run writes the rows measured so far as a report with failure.kind "interrupted". The flag itself is
// core/stop_request.hpp's, which the mechanisms' long set-up loops poll as well.
namespace arch_bench {

// True once a stop was requested; `interrupt_signal()` says which signal (0 when none).
bool interrupt_requested();
int interrupt_signal();
// Called from a signal handler: only touches lock-free atomics. Returns whether this was the first
// request (one compare-and-swap): two signals handled at once on two threads of the process must not
// both take themselves for the first.
bool request_interrupt(int signal_number);
// For tests and for commands that handle a request and go on.
void clear_interrupt();

// While one is alive (a run's measuring), the first SIGINT/SIGTERM only requests a stop; outside,
// a signal cleans up and exits at once (runner/cli/signals.hpp).
class GracefulInterrupt {
 public:
  GracefulInterrupt();
  GracefulInterrupt(const GracefulInterrupt&) = delete;
  GracefulInterrupt& operator=(const GracefulInterrupt&) = delete;
  ~GracefulInterrupt();
};
// Whether a GracefulInterrupt is alive; async-signal-safe (one lock-free load).
bool graceful_interrupt_open();

}  // namespace arch_bench
