#include "core/stop_request.hpp"

#include <atomic>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace {
std::atomic<int> requested_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the flag is set from a signal handler");
}  // namespace

bool stop_requested() { return requested_signal.load(std::memory_order_relaxed) != 0; }
int stop_signal() { return requested_signal.load(std::memory_order_relaxed); }
bool request_stop(int signal_number) {
  int none = 0;
  return requested_signal.compare_exchange_strong(none, signal_number, std::memory_order_relaxed);
}
void clear_stop_request() { requested_signal.store(0, std::memory_order_relaxed); }

void throw_if_stop_requested(const char* during) {
  if (!stop_requested()) return;
  throw CellFailure("interrupted", fmt::format("interrupted by signal {} while {}", stop_signal(), during));
}

}  // namespace arch_bench
