#include "runner/pipeline/interrupt.hpp"

#include <atomic>

namespace arch_bench {

namespace {
std::atomic<int> requested_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the flag is set from a signal handler");
std::atomic<bool> graceful{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is read from a signal handler");
}  // namespace

bool interrupt_requested() { return requested_signal.load(std::memory_order_relaxed) != 0; }
int interrupt_signal() { return requested_signal.load(std::memory_order_relaxed); }
bool request_interrupt(int signal_number) {
  int none = 0;
  return requested_signal.compare_exchange_strong(none, signal_number, std::memory_order_relaxed);
}
void clear_interrupt() { requested_signal.store(0, std::memory_order_relaxed); }

GracefulInterrupt::GracefulInterrupt() { graceful.store(true); }
GracefulInterrupt::~GracefulInterrupt() { graceful.store(false); }
bool graceful_interrupt_open() { return graceful.load(); }

}  // namespace arch_bench
