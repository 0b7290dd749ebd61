#include "runner/cli/parse_fraction.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

double parse_fraction(const std::string& text, const std::string& option) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !std::isfinite(value) || value < 0) {
    throw UsageError(fmt::format("{} '{}': give a non-negative percentage (5%) or fraction (0.05)", option, text));
  }
  if (!percent && value >= 1) {
    throw UsageError(fmt::format("{} '{}' is ambiguous; write {}% for a percentage or a fraction below 1", option,
                                 text, text));
  }
  return percent ? value / 100 : value;
}

}  // namespace arch_bench
