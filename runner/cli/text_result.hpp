#pragma once
// The --output of the commands that print one text result (export, report, diff): checked before any
// work, then the text goes to standard output or, atomically and never over an existing file, to it.
#include <string>

#include <CLI/CLI.hpp>

namespace arch_bench {

// Registers --output into `output`; `what` names the text in the help ("the diff"; empty: "to this file").
void add_text_output_option(CLI::App& command, std::string& output, const std::string& what = "");

// UsageError now, before anything is read, when `output` is given and cannot be written or exists.
void check_text_output(const std::string& output);

// Prints `text` when `output` is empty; else writes it to `output` and returns true, so that the command
// says on its own terms what it wrote.
bool write_text_result(const std::string& output, const std::string& text);

}  // namespace arch_bench
