#include "runner/present/markdown_escape.hpp"

#include <fmt/format.h>

#include "runner/present/printable_text.hpp"

namespace arch_bench {

std::string markdown_text(std::string_view text) {
  const std::string visible = escape_control_bytes(text);
  std::string out;
  out.reserve(visible.size());
  for (char c : visible) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\n': out += ' '; break;
      // A backslash of the text is escaped too, or `a\|b` would become `a\\|b` and break the row.
      // Emphasis (`*`, `_`) is harmless and stays as typed: `softmax_kv` reads as itself in the source.
      case '\\': case '`': case '|': case '[': case ']':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string markdown_link_target(std::string_view path) {
  std::string out;
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    out += plain ? std::string(1, c) : fmt::format("%{:02X}", byte);
  }
  return out;
}

}  // namespace arch_bench
