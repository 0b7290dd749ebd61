// `arch-bench report`: what the summary says about committed result reports (in process, against
// the reports' own values), the Markdown and HTML printers, then the real executable: output
// files, refusals, and charts through scripts/plot.py where Debian's python3-matplotlib is installed.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runner/diff/load_report.hpp"
#include "runner/present/number_text.hpp"
#include "runner/present/presentation.hpp"
#include "runner/present/summarize_reports.hpp"
#include "support/cli.hpp"
#include "support/stored_reports.hpp"
#include "support/cli_refusals.hpp"
#include "tests/support/build_paths.hpp"

namespace arch_bench::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
const std::string kPerformerQkReport = (kResults / "performer_favor_cpp-kernels-2core-qk0.3.json").string();
const std::string kLandscapeReport = (kResults / "landscape_cpp-kernels-2core.json").string();

const Fact* fact(const Section& section, const std::string& label) {
  for (const Fact& f : section.facts) {
    if (f.label == label) return &f;
  }
  return nullptr;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

bool matplotlib_available() { return std::system("/usr/bin/python3 -c 'import matplotlib' > /dev/null 2>&1") == 0; }

TEST(ReportSummary, OneReportHasItsDecisionCrossoverAndATablePerPhase) {
  const LoadedReport report = read_report(kLinearReport);
  const Presentation presentation = summarize_reports({report}, {});
  ASSERT_EQ(presentation.sections.size(), 1u);
  const Section& section = presentation.sections.front();
  ASSERT_NE(fact(section, "decision"), nullptr);
  EXPECT_EQ(fact(section, "decision")->value, report.document["decision"]["verdict"]);
  EXPECT_EQ(fact(section, "crossover")->value.rfind("decode: L = 512", 0), 0u) << fact(section, "crossover")->value;
  EXPECT_NE(fact(section, "ceilings")->value.find("GB/s"), std::string::npos);
  EXPECT_NE(fact(section, "identity")->value.find("arch-linear-recurrence-v2"), std::string::npos);
  ASSERT_EQ(section.bullets.size(), report.document["decision"]["reasons"].size() + report.document["notes"].size());

  ASSERT_EQ(section.tables.size(), 1u);
  const Table& table = section.tables.front();
  EXPECT_EQ(table.caption, "decode");
  const json& rows = report.document["metrics"]["rows"];
  ASSERT_EQ(table.rows.size(), rows.size());
  const auto column = [&table](const std::string& name) {
    return static_cast<std::size_t>(std::find(table.header.begin(), table.header.end(), name) - table.header.begin());
  };
  // Grouped by arm, lengths ascending: the baseline's three lengths first.
  for (const json& row : rows) {
    const std::string label = row["mechanism"] == "softmax_kv" ? "softmax_kv (baseline)" : "linear_attention";
    const std::string length = std::to_string(row["sequence_length"].get<int>());
    const auto found = std::find_if(table.rows.begin(), table.rows.end(), [&](const auto& cells) {
      return cells[column("mechanism")] == label && cells[column("L")] == length;
    });
    ASSERT_NE(found, table.rows.end()) << label << " " << length;
    EXPECT_EQ((*found)[column("median ms")], present_text::milliseconds(row["median_step_ms"].get<double>()));
    EXPECT_EQ((*found)[column("p05–p95 ms")],
              present_text::band(row["p05_step_ms"].get<double>(), row["p95_step_ms"].get<double>()));
    EXPECT_EQ((*found)[column("state")], present_text::bytes(row["state_bytes"].get<double>()));
    EXPECT_EQ((*found)[column("status")], "ok");
  }
  const std::vector<std::string> order{"512", "2048", "8192", "512", "2048", "8192"};
  for (std::size_t r = 0; r < order.size(); ++r) EXPECT_EQ(table.rows[r][column("L")], order[r]);
  // The explicit history at L = 8192: 2 x 8192 x 64 x 8 heads x 2 bytes.
  EXPECT_EQ(table.rows[2][column("mechanism")], "softmax_kv (baseline)");
  EXPECT_EQ(table.rows[2][column("state")], "16 MiB");
}

// The H200's prefill report (results/h200-2026-12-04): prefill is compute-bound there, so its table
// gives each row's rate against the run's FLOP ceiling; the decode table does not. A kernel column
// appears once a row names the GPU kernel that ran (reports from before gpu_kernel have none).
TEST(ReportSummary, PrefillTablesGiveTheFlopRateAndGpuRowsTheirKernel) {
  LoadedReport report = read_report((kResults / "h200-2026-12-04" / "gpu-prefill.json").string());
  const auto prefill_table = [](const LoadedReport& loaded) {
    const Presentation presentation = summarize_reports({loaded}, {});
    for (const Table& table : presentation.sections.front().tables) {
      if (table.caption == "prefill") return table;
    }
    return Table{};
  };
  const Table before = prefill_table(report);
  const auto has = [](const Table& table, const std::string& name) {
    return std::find(table.header.begin(), table.header.end(), name) != table.header.end();
  };
  ASSERT_TRUE(has(before, "% of peak FLOP/s"));
  EXPECT_FALSE(has(before, "kernel"));
  const auto flop_column = static_cast<std::size_t>(
      std::find(before.header.begin(), before.header.end(), "% of peak FLOP/s") - before.header.begin());
  std::set<std::string> expected, shown;
  for (const json& row : report.document["metrics"]["rows"]) {
    if (row["phase"] == "prefill") expected.insert(present_text::percent(row["fraction_of_peak_flops"].get<double>()));
  }
  for (const auto& cells : before.rows) shown.insert(cells[flop_column]);
  EXPECT_EQ(shown, expected);
  EXPECT_NE(shown.count("0.4%"), 0u);  // linear_attention at L 2048: 3.6 TFLOP/s of the 892 measured

  for (json& row : report.document["metrics"]["rows"]) row["gpu_kernel"] = "named_kernel";
  const Table after = prefill_table(report);
  ASSERT_TRUE(has(after, "kernel"));
  const auto kernel_column = static_cast<std::size_t>(
      std::find(after.header.begin(), after.header.end(), "kernel") - after.header.begin());
  EXPECT_EQ(after.rows.front()[kernel_column], "named_kernel");

  const Presentation decode_only = summarize_reports({read_report(kLinearReport)}, {});
  for (const Table& table : decode_only.sections.front().tables) {
    EXPECT_FALSE(has(table, "% of peak FLOP/s")) << table.caption;
  }
}

// The workload fact says when short steps may have run on one thread (workload.team_trial), and
// says nothing of it for a report older than the trial or one run with it off.
TEST(ReportSummary, TheWorkloadFactNamesTheTeamTrial) {
  LoadedReport report = read_report(kLinearReport);
  report.document["workload"].erase("team_trial");
  const auto workload_fact = [](const LoadedReport& loaded) {
    return fact(summarize_reports({loaded}, {}).sections.front(), "workload")->value;
  };
  EXPECT_EQ(workload_fact(report).find("team trial"), std::string::npos);
  report.document["workload"]["team_trial"] = false;
  EXPECT_EQ(workload_fact(report).find("team trial"), std::string::npos);
  report.document["workload"]["team_trial"] = true;
  EXPECT_NE(workload_fact(report).find("threads (team trial: short steps may run on one)"), std::string::npos)
      << workload_fact(report);
}

TEST(ReportSummary, PerformerTablesCarryTheApproximationErrorAndLandscapeItsRanking) {
  const Presentation performer = summarize_reports({read_report(kPerformerReport)}, {});
  ASSERT_EQ(performer.sections.front().tables.size(), 2u);  // decode, prefill
  const Table& decode = performer.sections.front().tables.front();
  EXPECT_NE(std::find(decode.header.begin(), decode.header.end(), "rel L2 vs softmax"), decode.header.end());

  const Presentation landscape = summarize_reports({read_report(kLandscapeReport)}, {});  // as read, once more
  const auto& tables = landscape.sections.front().tables;
  const auto ranking = std::find_if(tables.begin(), tables.end(),
                                    [](const Table& t) { return t.caption.rfind("ranking, decode", 0) == 0; });
  ASSERT_NE(ranking, tables.end());
  const LoadedReport report = read_report(kLandscapeReport);
  const json& fastest = report.document["decision"]["details"]["ranking"]["decode"]["fastest_first"];
  ASSERT_GE(fastest.size(), 9u);  // every arm: the baseline and 8 candidates
  ASSERT_EQ(ranking->rows.size(), fastest.size());
  EXPECT_EQ(ranking->rows.front()[0], "1");
  EXPECT_EQ(ranking->rows.front()[1], fastest.front()["mechanism"]);
}

TEST(ReportSummary, SeveralReportsGetASideBySideTableWithRatiosToTheFirst) {
  // Run b: the same cells at twice the median, and without its last row.
  const LoadedReport a = read_report(kPerformerReport);
  LoadedReport b = a;
  b.file = "b.json";
  b.document["identity"]["run_label"] = "twice";
  json& rows_b = b.document["metrics"]["rows"];
  for (json& row : rows_b) row["median_step_ms"] = row["median_step_ms"].get<double>() * 2;
  const json removed = rows_b.back();
  rows_b.erase(rows_b.size() - 1);

  const Presentation presentation = summarize_reports({a, b}, {});
  ASSERT_EQ(presentation.sections.size(), 3u);
  const Section& side = presentation.sections.front();
  EXPECT_EQ(side.heading, "side by side");
  ASSERT_EQ(side.tables.size(), 2u);  // decode, prefill
  std::size_t cells = 0, doubled = 0, missing = 0;
  for (const Table& table : side.tables) {
    ASSERT_EQ(table.header.size(), 4u);  // cell, median a, median b, b / a
    EXPECT_EQ(table.header[3], "twice / cpp-kernels-2core");
    for (const auto& row : table.rows) {
      ++cells;
      if (row[3] == "2x") ++doubled;
      if (row[2] == "-" && row[3] == "-") ++missing;
    }
  }
  EXPECT_EQ(cells, a.document["metrics"]["rows"].size());  // every cell of either report, once
  EXPECT_EQ(doubled, cells - 1);
  EXPECT_EQ(missing, 1u);
  EXPECT_EQ(removed["phase"], "prefill");
  EXPECT_EQ(side.tables[1].rows.back()[2], "-");
}

TEST(ReportMarkdown, TablesStayTablesWhateverTheTextSays) {
  Presentation presentation;
  presentation.title = "t";
  Section section;
  section.heading = "h";
  section.bullets.push_back("reason: a | b\nc");
  section.tables.push_back({"decode", {"mechanism", "median ms"}, {false, true}, {{"x|y", "1.5"}}});
  section.charts.push_back({"r.json", "step_time", "step time", "plots/a b.png", ""});
  presentation.sections.push_back(section);
  const std::string markdown = format_markdown(presentation);
  EXPECT_NE(markdown.find("- reason: a \\| b c\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| mechanism | median ms |\n|---|---:|\n| x\\|y | 1.5 |\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("![step time](plots/a%20b.png)"), std::string::npos) << markdown;
}

// GitHub job summaries render the HTML that Markdown lets through and follow its links: text from a
// report (labels, notes, reasons) must arrive as the characters it is. On the old printer <script>,
// <img onerror> and [x](javascript:) passed as they were.
TEST(ReportMarkdown, HtmlLinksAndControlBytesFromTheReportAreInert) {
  Presentation presentation;
  presentation.title = "<script>alert(1)</script>";
  Section section;
  section.heading = "run `x`";
  section.facts.push_back({"note", "<img src=x onerror=alert(1)>"});
  section.bullets.push_back("reason: [x](javascript:alert(1)) and ![i](http://evil/i.png) &amp;");
  section.bullets.push_back("a\\|b");  // the text's own backslash must not unescape the pipe
  section.bullets.push_back("red \x1b[31mtext\x1b[0m, bell \a, CR \r, C1 CSI \xc2\x9b");
  section.tables.push_back({"decode", {"mechanism"}, {false}, {{"<b>x</b> [y](javascript:z)"}}});
  section.charts.push_back({"r.json", "step_time", "t", "plots/a)b<c>.png", ""});
  presentation.sections.push_back(section);
  const std::string markdown = format_markdown(presentation);
  for (const char* live : {"<script", "<img", "<b>", "[x]", "![i]", "`x`"}) {
    EXPECT_EQ(markdown.find(live), std::string::npos) << live << "\n" << markdown;
  }
  // A link needs `](` with an unescaped `]`.
  for (std::size_t at = markdown.find("]("); at != std::string::npos; at = markdown.find("](", at + 1)) {
    if (markdown.compare(at + 2, 6, "plots/") == 0) continue;  // the chart's own image link
    EXPECT_EQ(markdown[at - 1], '\\') << markdown.substr(at - 10, 30);
  }
  EXPECT_NE(markdown.find("## &lt;script&gt;alert(1)&lt;/script&gt;\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("- **note**: &lt;img src=x onerror=alert(1)&gt;\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("- reason: \\[x\\](javascript:alert(1)) and !\\[i\\](http://evil/i.png) &amp;amp;\n"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("### run \\`x\\`\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("- a\\\\\\|b\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| &lt;b&gt;x&lt;/b&gt; \\[y\\](javascript:z) |\n"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("(plots/a%29b%3Cc%3E.png)"), std::string::npos) << markdown;
  // Control bytes are shown, not sent: no ESC, BEL, CR or C1 byte reaches the file.
  for (const char control : {'\x1b', '\a', '\r'}) EXPECT_EQ(markdown.find(control), std::string::npos);
  EXPECT_EQ(markdown.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(markdown.find("red \\\\x1b\\[31mtext\\\\x1b\\[0m, bell \\\\x07, CR \\\\x0d, C1 CSI \\\\u009b"),
            std::string::npos)
      << markdown;
}

TEST(ReportHtml, EscapesTextAndRefusesAMissingChart) {
  Presentation presentation;
  presentation.title = "<script>";
  Section section;
  section.facts.push_back({"a&b", "\"q\""});
  presentation.sections.push_back(section);
  const std::string html = format_html(presentation);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<b>a&amp;b</b>: &quot;q&quot;"), std::string::npos);
  presentation.sections.front().charts.push_back({"r.json", "step_time", "t", "/nonexistent/chart.png", ""});
  EXPECT_THROW(format_html(presentation), std::exception);
}

TEST(ReportHtml, ControlBytesAreShownEscaped) {
  Presentation presentation;
  presentation.title = "run \x1b[2J\a";
  Section section;
  section.bullets.push_back("note: \x1b]0;owned\a");
  presentation.sections.push_back(section);
  const std::string html = format_html(presentation);
  EXPECT_EQ(html.find('\x1b'), std::string::npos);
  EXPECT_EQ(html.find('\a'), std::string::npos);
  EXPECT_NE(html.find("<li>note: \\x1b]0;owned\\x07</li>"), std::string::npos) << html;
}

TEST(ReportCli, MarkdownToStandardOutputAndToAFileThatIsNeverOverwritten) {
  auto result = run_cli(fmt::format("report '{}'", kLinearReport));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("## arch-bench report: cpp-kernels-2core\n", 0), 0u) << result.out;
  EXPECT_NE(result.out.find("| softmax_kv (baseline) | 8192 |"), std::string::npos) << result.out;

  TempFolder folder;
  const auto output = folder / "summary.md";
  result = run_cli(fmt::format("report '{}' '{}' --output '{}'", kPerformerReport, kPerformerQkReport, output.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string written = testing::read_text(output);
  EXPECT_NE(written.find("### side by side"), std::string::npos);
  testing::expect_overwrite_refused(fmt::format("report '{}' --output '{}'", kLinearReport, output.string()), output);
}

TEST(ReportCli, NotesReasonsAndFailuresOfAValidReportReachTheMarkdownInert) {
  TempFolder folder;
  const auto hostile = testing::tampered_linear_report(folder, [](json& document) {
    document["notes"].push_back("<script>alert(1)</script>");
    document["decision"]["reasons"].push_back("[x](javascript:alert(1)) \x1b]0;owned\a");
    document["identity"]["workload_id"] = "<img src=x onerror=alert(1)>";
  });
  const auto result = run_cli(fmt::format("report '{}'", hostile.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.find("<script"), std::string::npos);
  EXPECT_EQ(result.out.find("<img"), std::string::npos);
  EXPECT_EQ(result.out.find("[x](javascript"), std::string::npos);
  EXPECT_EQ(result.out.find('\x1b'), std::string::npos);
  EXPECT_NE(result.out.find("- note: &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\\[x\\](javascript:alert(1)) \\\\x1b\\]0;owned\\\\x07"), std::string::npos) << result.out;
}

TEST(ReportCli, AnInvalidReportIsExitTwoAndNothingIsWritten) {
  TempFolder folder;
  const auto bad = folder / "bad.json", output = folder / "out.md";
  std::ofstream(bad) << R"({"schema_version": "1.0.0"})";
  const auto result = run_cli(fmt::format("report '{}' '{}' --output '{}'", kLinearReport, bad.string(), output.string()));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("bad.json"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_EQ(run_cli(fmt::format("report '{}' --format pdf", kLinearReport)).exit_code, 2);
}

TEST(ReportCli, HtmlIsOneSelfContainedPage) {
  TempFolder folder;
  const auto page = folder / "report.html";
  const auto result = run_cli(fmt::format("report '{}' --format html --output '{}'", kLandscapeReport, page.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string html = testing::read_text(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<table>"), count(html, "</table>"));
  EXPECT_GE(count(html, "<table>"), 4u);  // decode, prefill, two rankings
  // Nothing to fetch: no external script, style sheet or image.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*"(https?:|//))")));
}

TEST(ReportCli, PlotsAreLinkedFromTheMarkdownAndInlinedInTheHtml) {
  if (!matplotlib_available()) {
    GTEST_SKIP() << "skipped: /usr/bin/python3 cannot import matplotlib (apt-get install python3-matplotlib)";
  }
  TempFolder folder;
  const auto output = folder / "out" / "summary.md";
  fs::create_directories(output.parent_path());
  auto result = run_cli(fmt::format("report '{}' --plots '{}' --svg --output '{}'", kLinearReport,
                                    (folder / "charts").string(), output.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string markdown = testing::read_text(output);
  const std::regex image(R"(!\[[^\]]*\]\(([^)]+\.png)\))");
  std::size_t images = 0;
  for (std::sregex_iterator it(markdown.begin(), markdown.end(), image), end; it != end; ++it, ++images) {
    const fs::path linked = output.parent_path() / (*it)[1].str();  // relative to the Markdown file
    EXPECT_TRUE(fs::is_regular_file(linked)) << linked;
    EXPECT_GT(fs::file_size(linked), 1000u) << linked;
    EXPECT_TRUE(fs::is_regular_file(fs::path(linked).replace_extension(".svg"))) << linked;
  }
  EXPECT_EQ(images, 4u);  // step time, state bytes, peak memory, error

  // The same charts again would replace them: refused, and no report written.
  result = run_cli(fmt::format("report '{}' --plots '{}' --output '{}'", kLinearReport, (folder / "charts").string(),
                               (folder / "again.md").string()));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_FALSE(fs::exists(folder / "again.md"));

  const auto page = folder / "page.html";
  result = run_cli(fmt::format("report '{}' --format html --plots '{}' --output '{}'", kLinearReport,
                               (folder / "page-charts").string(), page.string()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(count(testing::read_text(page), "src=\"data:image/png;base64,iVBORw0KGgo"), 4u);
}

TEST(ReportCli, PlottingUnavailableIsExitTwoNamingThePackage) {
  TempFolder folder;
  // A Python that cannot exist: the command must say what to install, not crash.
  const std::string command =
      fmt::format("ARCH_BENCH_PYTHON=/nonexistent/python3 '{}' report '{}' --plots '{}' > /dev/null 2> '{}'",
                  executable_path(), kLinearReport, (folder / "charts2").string(), (folder / "err").string());
  const int status = std::system(command.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(testing::read_text(folder / "err").find("python3-matplotlib"), std::string::npos)
      << testing::read_text(folder / "err");
}

}  // namespace
}  // namespace arch_bench::testing
