#pragma once
// The message of the UsageError an action throws: the one way the tests catch one to read it.
#include <functional>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/errors.hpp"

namespace arch_bench::testing {

// The message of the UsageError that `action` throws; nullopt when it throws none.
inline std::optional<std::string> thrown_usage_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const UsageError& error) {
    return std::string(error.what());
  }
  return std::nullopt;
}

// The message of the UsageError that `action` throws; a test failure when it throws none.
inline std::string usage_error_message(const std::function<void()>& action) {
  const std::optional<std::string> message = thrown_usage_error(action);
  if (!message) ADD_FAILURE() << "no UsageError";
  return message.value_or("");
}

// The message of the UsageError that `action` throws; "" when it throws none (for a test that
// expects either).
inline std::string usage_error_or_empty(const std::function<void()>& action) {
  return thrown_usage_error(action).value_or("");
}

}  // namespace arch_bench::testing
