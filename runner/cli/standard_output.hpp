#pragma once
// Output lost is an error. A command that prints its result (export, report, diff, list, validate)
// to a full disk (`> /dev/full`), a closed pipe or a quota-bound file gets no error from each print:
// stdio buffers the text and fails later, and a failed write only sets the stream's error flag. So
// main() asks here, once, after every command: flush, then the flag.
#include <optional>
#include <string>

namespace arch_bench {

// Flushes stdout; the reason ("No space left on device") when that or an earlier write to stdout
// failed, nullopt when everything printed reached it.
std::optional<std::string> standard_output_failure();

}  // namespace arch_bench
