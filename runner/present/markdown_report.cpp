// The Presentation as GitHub-flavoured Markdown, for $GITHUB_STEP_SUMMARY or a pull request.
#include <fmt/format.h>

#include "runner/present/markdown_escape.hpp"
#include "runner/present/presentation.hpp"

namespace arch_bench {

namespace {
// Every text from a report (labels, notes, reasons, file names) is inert Markdown and keeps a table
// a table: runner/present/markdown_escape.hpp.
std::string cell(const std::string& text) { return markdown_text(text); }

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
      out += fmt::format("![{}]({})", cell(chart.title), markdown_link_target(chart.png));
      if (!chart.svg.empty()) out += fmt::format(" ([SVG]({}))", markdown_link_target(chart.svg));
      out += "\n\n";
    }
  }
  return out;
}

}  // namespace arch_bench
