#include "runner/present/number_text.hpp"

#include <cmath>

#include <fmt/format.h>

namespace arch_bench::present_text {

std::optional<double> number(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number()) return std::nullopt;
  return found->get<double>();
}

std::string text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

std::string milliseconds(std::optional<double> ms) {
  if (!ms || !std::isfinite(*ms)) return "-";
  return fmt::format("{:.4g}", *ms);
}

std::string band(std::optional<double> low, std::optional<double> high) {
  if (!low || !high) return "-";
  return milliseconds(low) + "–" + milliseconds(high);
}

std::string bytes(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return "-";
  // Binary units, because state sizes are powers of two (64 KiB, 1 MiB) and read best that way.
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double scaled = *value;
  int unit = 0;
  while (std::fabs(scaled) >= 1024 && unit < 4) {
    scaled /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", scaled);
  return fmt::format("{:.4g} {}", scaled, kUnits[unit]);
}

std::string percent(std::optional<double> fraction) {
  if (!fraction || !std::isfinite(*fraction)) return "-";
  return fmt::format("{:.1f}%", *fraction * 100);
}

std::string scientific(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return "-";
  return fmt::format("{:.2e}", *value);
}

std::string ratio(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return "-";
  return fmt::format("{:.3g}x", *value);
}

}  // namespace arch_bench::present_text
