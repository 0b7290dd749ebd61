#include "runner/pipeline/interrupt.hpp"

#include <atomic>

#include "core/stop_request.hpp"

namespace arch_bench {

namespace {
std::atomic<bool> graceful{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is read from a signal handler");
}  // namespace

// One flag for every layer (core/stop_request.hpp): the mechanisms' set-up loops poll it too.
bool interrupt_requested() { return stop_requested(); }
int interrupt_signal() { return stop_signal(); }
bool request_interrupt(int signal_number) { return request_stop(signal_number); }
void clear_interrupt() { clear_stop_request(); }

GracefulInterrupt::GracefulInterrupt() { graceful.store(true); }
GracefulInterrupt::~GracefulInterrupt() { graceful.store(false); }
bool graceful_interrupt_open() { return graceful.load(); }

}  // namespace arch_bench
