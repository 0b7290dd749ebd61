#pragma once
// One printer per output format; each reads only the DiffResult, so a new field needs no change to
// the comparison. The JSON printer's output is valid against schemas/diff.schema.json.
#include <string>

#include <nlohmann/json.hpp>

#include "runner/diff/diff.hpp"

namespace arch_bench {

std::string format_diff_text(const DiffResult& diff);      // aligned table for a terminal or a log
std::string format_diff_markdown(const DiffResult& diff);  // GitHub-flavoured, for a CI job summary
nlohmann::json diff_to_json(const DiffResult& diff);       // schemas/diff.schema.json

}  // namespace arch_bench
