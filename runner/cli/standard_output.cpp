#include "runner/cli/standard_output.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace arch_bench {

std::optional<std::string> standard_output_failure() {
  errno = 0;
  if (std::fflush(stdout) != 0) return std::string(std::strerror(errno));
  // An earlier write failed (fmt::print and fwrite set the flag); its errno is gone by now.
  if (std::ferror(stdout)) return std::string("a write to it failed");
  return std::nullopt;
}

}  // namespace arch_bench
