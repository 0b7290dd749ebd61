// `arch-bench list`: the modes, mechanisms (with the options each declares) and backends this build has.
#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/options.hpp"
#include "mechanisms/registry.hpp"
#include "core/backends/cuda/device_probe.hpp"
#include "mechanisms/common/cudnn_library.hpp"
#include "runner/cli/commands.hpp"
#include "runner/cli/parse_lists.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/models/model_listing.hpp"
#include "runner/models/model_request.hpp"
#include "runner/plugins/load_plugin.hpp"
#include "runner/plugins/plugin_report.hpp"
#include "runner/present/printable_text.hpp"
#include "runner/modes/mode.hpp"

namespace arch_bench {

namespace {
// The options a mechanism declares (core/options.hpp), as `run` and `conformance` take them.
nlohmann::json options_json(const std::vector<OptionSpec>& specs) {
  nlohmann::json options = nlohmann::json::array();
  for (const OptionSpec& spec : specs) {
    options.push_back({{"key", spec.key},
                       {"flag", spec.flag()},
                       {"type", option_type_name(spec.type)},
                       {"default", option_value_text(spec.default_value)},
                       {"allowed", spec.allowed()},
                       {"help", spec.help}});
  }
  return options;
}

nlohmann::json listing() {
  nlohmann::json modes = nlohmann::json::array();
  for (const auto& mode : all_modes()) {
    const ModeDefaults defaults = mode->defaults();
    nlohmann::json arms = nlohmann::json::array();
    for (const Arm& arm : mode->arms(defaults.workload)) {
      arms.push_back({{"mechanism", arm.mechanism}, {"role", role_name(arm.role)}, {"variant", arm.variant}});
    }
    modes.push_back({{"id", mode->id()},
                     {"title", mode->title()},
                     {"experiment", defaults.experiment},
                     {"semantic_id", defaults.semantic_id},
                     {"workload_id", defaults.workload_id},
                     {"sequence_lengths", defaults.workload.sequence_lengths},
                     {"arms", arms}});
  }
  nlohmann::json mechanisms = nlohmann::json::array();
  for (const auto& mechanism : all_mechanisms()) {
    const MechanismInfo& info = mechanism->info();
    mechanisms.push_back({{"id", info.id},
                          {"title", info.title},
                          {"state_kind", state_kind_name(info.state_kind)},
                          {"backends", info.backends},
                          {"options", options_json(mechanism->option_specs())}});
    if (const nlohmann::json plugin = plugin_json(info.id); !plugin.is_null()) mechanisms.back()["plugin"] = plugin;
  }
  const CudaProbe cuda = probe_cuda();
  nlohmann::json backends = nlohmann::json::array();
  backends.push_back({{"id", "cpu"}, {"usable", true}, {"detail", "always available"}});
  backends.push_back({{"id", "cuda"},
                      {"usable", cuda.usable},
                      {"detail", cuda.usable ? fmt::format("{} device(s)", cuda.device_count) : cuda.reason}});
  // Libraries loaded at run time (never linked): whether this process can use them, and why not.
  const CudnnLibrary& cudnn = cudnn_library();
  nlohmann::json libraries = nlohmann::json::array();
  libraries.push_back({{"id", "cudnn"},
                       {"usable", cudnn.usable()},
                       {"detail", cudnn.usable() ? fmt::format("{}: softmax_kv --softmax-impl cudnn/auto on --device cuda",
                                                               cudnn_library_summary(cudnn))
                                                 : fmt::format("{}; softmax_kv runs its hand-written CUDA kernels",
                                                               cudnn.reason)}});
  return {{"modes", modes}, {"mechanisms", mechanisms}, {"backends", backends}, {"libraries", libraries}};
}
}  // namespace

namespace {
struct ModelListOptions {
  bool models = false;
  std::string context, dtype = "bfloat16", device = "cpu";
  double memory_gib = 0;
};

// The planning request from --context, --dtype, --memory-gib and --device (UsageError, exit 2).
ModelListingRequest model_listing_request(const ModelListOptions& o, const CLI::App& command) {
  ModelListingRequest request;
  if (command.count("--context") > 0) request.contexts = parse_positive_list("--context", o.context);
  const auto dtype = parse_dtype(o.dtype);
  if (!dtype) throw UsageError(fmt::format("--dtype: unknown dtype '{}' (use bfloat16/bf16 or float32/fp32)", o.dtype));
  request.dtype = *dtype;
  if (o.device != "cpu" && o.device != "cuda") throw UsageError(fmt::format("--device: '{}' is not cpu or cuda", o.device));
  request.memory_bytes = planning_memory_bytes(o.memory_gib, command.count("--memory-gib") > 0, o.device,
                                               request.memory_source);
  return request;
}
}  // namespace

void register_list_command(CLI::App& app, CommandContext& context) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("list", "List the modes, mechanisms and backends of this build; --models: "
                                                 "the model presets with their cache bytes and largest batch");
  command->add_flag("--json", *as_json, "Print the listing as JSON");
  auto plugins = std::make_shared<std::vector<std::string>>();
  add_plugin_option(*command, *plugins);
  auto models = std::make_shared<ModelListOptions>();
  command->add_flag("--models", models->models,
                    "List the model presets (models/*.json) instead: layer types, cache/state bytes per sequence and "
                    "the largest batch that fits after the weights at each --context, and what this build cannot run "
                    "yet");
  command->add_option("--context", models->context, "--models: comma-separated context lengths (default 8192,32768,131072)");
  command->add_option("--memory-gib", models->memory_gib,
                      "--models: the memory to plan with, GiB (default: MemAvailable, or the GPU's memory with "
                      "--device cuda)");
  command->add_option("--dtype", models->dtype, "--models: the K/V cache's dtype (default bfloat16)");
  command->add_option("--device", models->device, "--models: cpu or cuda, whose memory is planned with (default cpu)");
  command->callback([as_json, plugins, models, command, &context]() {
    load_plugins(*plugins);
    for (const char* flag : {"--context", "--memory-gib", "--dtype", "--device"}) {
      if (!models->models && command->count(flag) > 0) throw UsageError(fmt::format("{} applies to list --models", flag));
    }
    if (models->models) {
      const nlohmann::json listing = model_listing(model_listing_request(*models, *command));
      if (*as_json) fmt::print("{}\n", listing.dump(2));
      else print_model_listing(stdout, listing);
      context.exit_code = 0;
      return;
    }
    const nlohmann::json all = listing();
    context.exit_code = 0;
    if (*as_json) {
      fmt::print("{}\n", all.dump(2));
      return;
    }
    // Plugins name and describe their own mechanisms: what they say is shown, never obeyed by the terminal.
    std::string text;
    text += "modes:\n";
    for (const auto& mode : all["modes"]) {
      text += fmt::format("  {:<20} {}\n", mode["id"].get<std::string>(), mode["title"].get<std::string>());
      std::string arms;
      for (const auto& arm : mode["arms"]) {
        arms += fmt::format("{}{} ({}{})", arms.empty() ? "" : ", ", arm["mechanism"].get<std::string>(),
                            arm["role"].get<std::string>(),
                            arm["variant"].get<std::string>().empty() ? "" : ", " + arm["variant"].get<std::string>());
      }
      text += fmt::format("  {:<20} arms: {}\n", "", arms);
    }
    text += "mechanisms:\n";
    for (const auto& m : all["mechanisms"]) {
      text += fmt::format("  {:<20} {:<17} backends: {:<10} {}\n", m["id"].get<std::string>(),
                          m["state_kind"].get<std::string>(),
                          fmt::format("{}", fmt::join(m["backends"].get<std::vector<std::string>>(), ",")),
                          m["title"].get<std::string>());
      for (const auto& option : m["options"]) {
        text += fmt::format("  {:<20} option {} ({}, default {})\n", "", option["flag"].get<std::string>(),
                            option["allowed"].get<std::string>(), option["default"].get<std::string>());
      }
      if (m.contains("plugin")) {
        text += fmt::format("  {:<20} plugin {} {} ({}, sha256 {})\n", "", m["plugin"]["name"].get<std::string>(),
                            m["plugin"]["version"].get<std::string>(), m["plugin"]["path"].get<std::string>(),
                            m["plugin"]["sha256"].get<std::string>().substr(0, 16));
      }
    }
    text += "backends:\n";
    for (const auto& b : all["backends"]) {
      text += fmt::format("  {:<20} {:<17} {}\n", b["id"].get<std::string>(),
                          b["usable"].get<bool>() ? "usable" : "not usable", b["detail"].get<std::string>());
    }
    text += "libraries:\n";
    for (const auto& l : all["libraries"]) {
      text += fmt::format("  {:<20} {:<17} {}\n", l["id"].get<std::string>(),
                          l["usable"].get<bool>() ? "usable" : "not usable", l["detail"].get<std::string>());
    }
    fmt::print("{}", escape_control_bytes(text));
  });
}

}  // namespace arch_bench
