// The Presentation as one self-contained HTML page: inline CSS and every chart inlined as a
// data: URI, so the file opens in a browser with no network and can be attached to a ticket alone.
#include <array>
#include <filesystem>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/pipeline/input_file.hpp"
#include "runner/present/presentation.hpp"
#include "runner/present/printable_text.hpp"

namespace arch_bench {

namespace {
// Control bytes shown escaped too (printable_text.hpp): a page may be read as source, or copied to a terminal.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : escape_control_bytes(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

constexpr const char* kStyle = R"(body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.4em 0 1.2em}caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #ddd;padding:.25em .6em}th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
ul{padding-left:1.2em}figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:.9em;color:#555}
img{max-width:100%;border:1px solid #eee})";

std::string table_html(const Table& table) {
  std::string out = "<table>\n<caption>" + escape(table.caption) + "</caption>\n<tr>";
  for (const std::string& name : table.header) out += "<th>" + escape(name) + "</th>";
  out += "</tr>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool numeric = i < table.numeric.size() && table.numeric[i];
      out += (numeric ? "<td class=\"n\">" : "<td>") + escape(row[i]) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string chart_html(const Chart& chart) {
  std::string png;
  try {
    png = read_input_file(chart.png, "chart image");
  } catch (const UsageError& error) {
    throw UsageError(fmt::format("cannot inline the chart for the HTML page: {}", error.what()));
  }
  return fmt::format("<figure><img alt=\"{0}\" src=\"data:image/png;base64,{1}\"><figcaption>{0}</figcaption></figure>\n",
                     escape(chart.title), base64(png));
}
}  // namespace

std::string format_html(const Presentation& presentation) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n<style>\n{1}\n</style>\n"
      "</head>\n<body>\n<h1>{0}</h1>\n",
      escape(presentation.title), kStyle);
  for (const Section& section : presentation.sections) {
    out += "<section>\n<h2>" + escape(section.heading) + "</h2>\n<ul>\n";
    for (const Fact& fact : section.facts) out += "<li><b>" + escape(fact.label) + "</b>: " + escape(fact.value) + "</li>\n";
    for (const std::string& bullet : section.bullets) out += "<li>" + escape(bullet) + "</li>\n";
    out += "</ul>\n";
    for (const Table& table : section.tables) out += table_html(table);
    for (const Chart& chart : section.charts) out += chart_html(chart);
    out += "</section>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace arch_bench
