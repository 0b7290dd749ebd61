#pragma once
// Errors the user can act on. main() turns a UsageError into "error: <message>" and exit code 2,
// before anything is written.
#include <stdexcept>
#include <string>

namespace arch_bench {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace arch_bench
