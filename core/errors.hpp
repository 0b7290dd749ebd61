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

// A cell that could not be measured, with the kind its row records as `failure_kind`
// ("out_of_memory", "kernel_error", "device_lost", ...). The run goes on with the next cell unless
// `device_lost()`: a sticky device error (an illegal address) leaves the context unusable, so every
// remaining cell on that device fails with the same reason and the report is still written.
class CellFailure : public std::runtime_error {
 public:
  CellFailure(std::string kind, const std::string& message, bool device_lost = false)
      : std::runtime_error(message), kind_(std::move(kind)), device_lost_(device_lost) {}
  const std::string& kind() const { return kind_; }
  bool device_lost() const { return device_lost_; }

 private:
  std::string kind_;
  bool device_lost_;
};

}  // namespace arch_bench
