#pragma once
// Text from a report (labels, notes, reasons, failure messages, file names) placed into Markdown.
// GitHub job summaries and most viewers render the HTML that Markdown lets through, and follow its
// links: a label `<img src=x onerror=...>` or a note `[x](javascript:...)` would run or link when the
// summary is opened. Every printer that writes Markdown (report, diff) passes such text through here,
// so it shows as the characters it is and does nothing.
#include <string>
#include <string_view>

namespace arch_bench {

// `text` as inert Markdown inline text that is also safe inside a table cell: control bytes shown
// escaped (printable_text.hpp); `&`, `<`, `>` as entities (no raw HTML, no autolink); backslash,
// backtick, `|`, `[`, `]` backslash-escaped (no code span, no cell break, no link or image: without
// `[` there is no `[x](javascript:...)` and no `![x](...)`); line breaks as spaces (one line, one row).
std::string markdown_text(std::string_view text);

// A relative or absolute file path as a Markdown link target: every byte outside
// [A-Za-z0-9-._~/] percent-encoded, so spaces, parentheses and angle brackets cannot end the link
// or start another, and the target stays a plain path.
std::string markdown_link_target(std::string_view path);

}  // namespace arch_bench
