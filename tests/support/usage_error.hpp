#pragma once
// The message of the UsageError that `action` throws; a test failure when it throws none.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "core/errors.hpp"

namespace arch_bench::testing {

inline std::string usage_error_message(const std::function<void()>& action) {
  try {
    action();
  } catch (const UsageError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

}  // namespace arch_bench::testing
