// The Presentation as GitHub-flavoured Markdown, for $GITHUB_STEP_SUMMARY or a pull request.
#include <fmt/format.h>

#include "runner/present/presentation.hpp"

namespace arch_bench {

namespace {
// A table cell (or a fact) must not break the table: no pipe, no line break.
std::string cell(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '|') escaped += "\\|";
    else if (c == '\n' || c == '\r') escaped += ' ';
    else escaped += c;
  }
  return escaped;
}

// Spaces in a link target end it; %20 keeps the path one token for every Markdown renderer.
std::string link_target(const std::string& path) {
  std::string target;
  for (char c : path) target += c == ' ' ? std::string("%20") : std::string(1, c);
  return target;
}

std::string table_markdown(const Table& table) {
  std::string out = fmt::format("**{}**\n\n|", cell(table.caption));
  for (const std::string& name : table.header) out += " " + cell(name) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < table.header.size(); ++i) out += i < table.numeric.size() && table.numeric[i] ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const std::string& value : row) out += " " + cell(value) + " |";
    out += "\n";
  }
  return out + "\n";
}
}  // namespace

std::string format_markdown(const Presentation& presentation) {
  std::string out = fmt::format("## {}\n\n", cell(presentation.title));
  for (const Section& section : presentation.sections) {
    out += fmt::format("### {}\n\n", cell(section.heading));
    for (const Fact& fact : section.facts) out += fmt::format("- **{}**: {}\n", cell(fact.label), cell(fact.value));
    for (const std::string& bullet : section.bullets) out += fmt::format("- {}\n", cell(bullet));
    out += "\n";
    for (const Table& table : section.tables) out += table_markdown(table);
    for (const Chart& chart : section.charts) {
      out += fmt::format("![{}]({})", cell(chart.title), link_target(chart.png));
      if (!chart.svg.empty()) out += fmt::format(" ([SVG]({}))", link_target(chart.svg));
      out += "\n\n";
    }
  }
  return out;
}

}  // namespace arch_bench
