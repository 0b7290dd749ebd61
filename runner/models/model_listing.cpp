#include "runner/models/model_listing.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/models/model_footprint.hpp"
#include "runner/models/model_preset.hpp"

namespace arch_bench {

namespace {

nlohmann::json preset_entry(const ModelPreset& preset, const ModelListingRequest& request) {
  nlohmann::json layers = nlohmann::json::array();
  std::vector<std::string> cannot;
  for (const ModelLayer& layer : preset.layers) {
    nlohmann::json entry = {{"name", layer.name},         {"mechanism", layer.mechanism}, {"count", layer.count},
                            {"heads", layer.heads},       {"kv_heads", layer.kv_heads},   {"head_dim", layer.head_dim},
                            {"window", layer.window ? nlohmann::json(*layer.window) : nlohmann::json(nullptr)}};
    if (const auto why = cannot_run_yet(layer)) {
      entry["cannot_run_yet"] = *why;
      cannot.push_back(fmt::format("{}: {}", layer.name, *why));
    }
    layers.push_back(entry);
  }
  nlohmann::json contexts = nlohmann::json::array();
  const std::int64_t weights = weights_bytes(preset);
  for (std::int64_t length : request.contexts) {
    const auto bytes = sequence_state_bytes(preset, length, request.dtype);
    contexts.push_back({{"sequence_length", length},
                        {"state_bytes_per_sequence", bytes ? nlohmann::json(*bytes) : nlohmann::json(nullptr)},
                        {"max_batch", bytes ? nlohmann::json(max_batch(request.memory_bytes, weights, *bytes))
                                            : nlohmann::json(nullptr)}});
  }
  return {{"id", preset.id},
          {"name", preset.name},
          {"source", preset.source},
          {"sha256", preset.sha256},
          {"parameter_count", preset.parameter_count},
          {"weights_bytes", weights},
          {"layers", layers},
          {"contexts", contexts},
          {"runs", cannot.empty()},
          {"cannot_run_yet", cannot.empty() ? nlohmann::json(nullptr) : nlohmann::json(fmt::format("{}", fmt::join(cannot, "; ")))}};
}

std::string bytes_text(const nlohmann::json& bytes) {
  if (bytes.is_null()) return "?";
  const double value = bytes.get<double>();
  if (value >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", value / (1024.0 * 1024 * 1024));
  return fmt::format("{:.1f} MiB", value / (1024.0 * 1024));
}

}  // namespace

nlohmann::json model_listing(const ModelListingRequest& request) {
  nlohmann::json presets = nlohmann::json::array();
  for (const std::string& id : known_model_ids()) {
    try {
      presets.push_back(preset_entry(load_model_preset(id), request));
    } catch (const UsageError& error) {
      presets.push_back({{"id", id}, {"error", error.what()}});
    }
  }
  return {{"memory", {{"bytes", request.memory_bytes}, {"source", request.memory_source}}},
          {"cache_dtype", dtype_name(request.dtype)},
          {"models", presets}};
}

void print_model_listing(std::FILE* out, const nlohmann::json& listing) {
  fmt::print(out, "model presets (cache dtype {}; largest batch in {:.1f} GiB ({}) after the weights):\n",
             listing["cache_dtype"].get<std::string>(),
             listing["memory"]["bytes"].get<double>() / (1024.0 * 1024 * 1024),
             listing["memory"]["source"].get<std::string>());
  for (const nlohmann::json& model : listing["models"]) {
    if (model.contains("error")) {
      fmt::print(out, "  {:<22} error: {}\n", model["id"].get<std::string>(), model["error"].get<std::string>());
      continue;
    }
    std::string layers;
    for (const nlohmann::json& layer : model["layers"]) {
      layers += fmt::format("{}{} x {} {}x{}{}{}", layers.empty() ? "" : " + ", layer["count"].get<std::int64_t>(),
                            layer["mechanism"].get<std::string>(), layer["heads"].get<std::int64_t>(),
                            layer["head_dim"].get<std::int64_t>(),
                            layer["kv_heads"] != layer["heads"] ? fmt::format(" kv {}", layer["kv_heads"].get<std::int64_t>()) : "",
                            layer["window"].is_null() ? "" : fmt::format(" window {}", layer["window"].get<std::int64_t>()));
    }
    fmt::print(out, "  {:<22} {} ({:.2f} GiB of weights)\n", model["id"].get<std::string>(), layers,
               model["weights_bytes"].get<double>() / (1024.0 * 1024 * 1024));
    std::string contexts;
    for (const nlohmann::json& context : model["contexts"]) {
      contexts += fmt::format("{}L={}: {}/seq, batch {}", contexts.empty() ? "" : "; ",
                              context["sequence_length"].get<std::int64_t>(),
                              bytes_text(context["state_bytes_per_sequence"]),
                              context["max_batch"].is_null() ? std::string("?")
                                                             : std::to_string(context["max_batch"].get<std::int64_t>()));
    }
    fmt::print(out, "  {:<22} {}\n", "", contexts);
    if (!model["runs"].get<bool>()) {
      fmt::print(out, "  {:<22} cannot run yet: {}\n", "", model["cannot_run_yet"].get<std::string>());
    }
  }
}

}  // namespace arch_bench
