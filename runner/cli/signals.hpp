#pragma once
// SIGINT and SIGTERM. Outside a measurement, a signal removes the temporary files and staged sets
// being written (runner/report/temp_files.hpp) and exits at once with 128 + signal (130, 143).
// While `run` measures (a GracefulInterrupt, runner/pipeline/interrupt.hpp, is alive), the first
// signal only asks the measuring loop to stop, so that the rows measured so far are written as an
// interrupted report; a second signal cleans up and exits at once.
namespace arch_bench {

void install_signal_handlers();

// The exit code of a process stopped by `signal_number`, as a shell reports it: 128 + signal.
inline int exit_code_for_signal(int signal_number) { return 128 + signal_number; }

}  // namespace arch_bench
