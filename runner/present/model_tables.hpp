#pragma once
// The `model` block of a `run --model` report (schema 1.1.0) for `arch-bench report`: facts (the
// preset, its hash, the overrides, the memory planned with) and one table of whole-model figures per
// context length, the model as published and with its attention replaced by each candidate.
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/present/presentation.hpp"

namespace arch_bench {

// Adds nothing when the report has no model block (every report before 1.1.0, and runs without --model).
void add_model_presentation(const nlohmann::json& document, Section& section);

}  // namespace arch_bench
