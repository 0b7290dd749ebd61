#include "runner/present/model_tables.hpp"

#include <string>

#include <fmt/format.h>

#include "runner/present/number_text.hpp"

namespace arch_bench {

namespace t = present_text;

namespace {

std::string integer_or_dash(const nlohmann::json& value) {
  return value.is_number_integer() ? std::to_string(value.get<std::int64_t>()) : "-";
}

std::string overrides_text(const nlohmann::json& overrides) {
  if (!overrides.is_array() || overrides.empty()) return "none";
  std::string text;
  for (const nlohmann::json& o : overrides) {
    text += fmt::format("{}{} of {}: {} -> {}", text.empty() ? "" : "; ", t::text(o, "field"), t::text(o, "layer"),
                        o.value("preset", nlohmann::json()).dump(), o.value("value", nlohmann::json()).dump());
  }
  return text;
}

}  // namespace

void add_model_presentation(const nlohmann::json& document, Section& section) {
  const auto found = document.find("model");
  if (found == document.end() || !found->is_object()) return;
  const nlohmann::json& model = *found;
  std::string layers;
  for (const nlohmann::json& layer : model.value("layers", nlohmann::json::array())) {
    const bool grouped = layer.value("kv_heads", nlohmann::json()) != layer.value("heads", nlohmann::json());
    layers += fmt::format("{}{} x {} ({} heads{}, d {}{})", layers.empty() ? "" : " + ",
                          integer_or_dash(layer["count"]), t::text(layer, "mechanism"), integer_or_dash(layer["heads"]),
                          grouped ? fmt::format(", {} K/V", integer_or_dash(layer["kv_heads"])) : std::string(),
                          integer_or_dash(layer["head_dim"]),
                          layer.value("window", nlohmann::json()).is_number()
                              ? fmt::format(", window {}", layer["window"].get<std::int64_t>())
                              : std::string());
  }
  const nlohmann::json& memory = model.value("memory", nlohmann::json::object());
  section.facts.push_back({"model", fmt::format("{} (sha256 {}, {})", t::text(model, "id"),
                                                t::text(model, "sha256").substr(0, 12), t::text(model, "source"))});
  section.facts.push_back({"model layers", layers});
  section.facts.push_back({"model overrides", overrides_text(model.value("overrides", nlohmann::json()))});
  section.facts.push_back({"planning memory", fmt::format("{} ({}), of which {} reserved for the weights",
                                                          t::bytes(t::number(memory, "bytes")), t::text(memory, "source"),
                                                          t::bytes(t::number(memory, "weights_reserve_bytes")))});
  std::string replaced;
  for (const nlohmann::json& name : model.value("replaced_layers", nlohmann::json::array())) {
    replaced += (replaced.empty() ? "" : "+") + name.get<std::string>();
  }
  Table table;
  table.caption = fmt::format("model {}: whole-model decode (sequence-mixing layers), cache per sequence, largest batch",
                              t::text(model, "id"));
  table.header = {"L", "configuration", "decode step ms", "cache/state per sequence", "max batch"};
  table.numeric = {true, false, true, true, true};
  for (const nlohmann::json& at : model.value("lengths", nlohmann::json::array())) {
    const std::string length = integer_or_dash(at["sequence_length"]);
    auto add = [&](const std::string& configuration, const nlohmann::json& figures) {
      table.rows.push_back({length, configuration, t::milliseconds(t::number(figures, "decode_step_ms")),
                            t::bytes(t::number(figures, "state_bytes_per_sequence")),
                            integer_or_dash(figures["max_batch"])});
    };
    add("as published", at["model"]);
    for (const nlohmann::json& alternative : at.value("replaced_by", nlohmann::json::array())) {
      add(fmt::format("{} replaced by {}", replaced, t::text(alternative, "mechanism")), alternative);
    }
  }
  section.tables.push_back(std::move(table));
}

}  // namespace arch_bench
