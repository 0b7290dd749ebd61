#include "runner/cli/signals.hpp"

#include <cerrno>
#include <csignal>
#include <unistd.h>

#include "runner/pipeline/interrupt.hpp"
#include "runner/report/temp_files.hpp"

namespace arch_bench {

namespace {

void write_stderr(const char* text) {
  std::size_t length = 0;
  while (text[length] != '\0') ++length;
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text, length);
}

extern "C" void on_stop_signal(int signal_number) {
  const int saved_errno = errno;
  // A process-directed signal goes to any thread that does not hold it, so the OpenMP workers can
  // take one each at the same moment: only the one that records the first request stops gracefully.
  if (graceful_interrupt_open() && request_interrupt(signal_number)) {
    write_stderr("\narch-bench: interrupted; stopping after the current sample and writing the rows measured so far "
                 "(interrupt again to stop at once, writing nothing)\n");
    errno = saved_errno;
    return;
  }
  remove_registered_temp_paths();
  ::_exit(exit_code_for_signal(signal_number));
}

}  // namespace

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // Both signals are held while the handler runs, so that a second one waits for the first.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;
  for (int signal_number : {SIGINT, SIGTERM}) {
    struct sigaction previous {};
    // A shell starts background jobs with SIGINT ignored; keep that choice.
    if (::sigaction(signal_number, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace arch_bench
