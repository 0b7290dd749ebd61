// `arch-bench conformance`: a mechanism's kernels and fp64 reference on inputs from .npy files,
// so that a port to another framework can be checked against them (runner/conformance/).
#include <cmath>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/parse_lists.hpp"
#include "runner/cli/run_options.hpp"
#include "mechanisms/common/conformance_adapter.hpp"
#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"
#include "runner/conformance/conformance.hpp"
#include "core/errors.hpp"
#include "runner/plugins/load_plugin.hpp"

namespace arch_bench {

namespace {

struct ConformanceOptions {
  std::string mechanism;
  std::string inputs, outputs, generate;
  std::string dtype = "float32";
  std::map<std::string, std::string> option_flags;  // --feature-map, --features, ... by key
  std::vector<std::string> option_assignments;       // --option KEY=VALUE
  ConformanceShape shape;
  std::string seed = "0";  // parse_seed(): 0 .. 2^63-1, as for `run --seed`
  bool overwrite = false;
  bool describe = false;
  std::string device = "cpu";  // whose kernels run: cpu or cuda
  std::vector<std::string> plugins;  // --plugin FILE (repeatable)
};

DType dtype_or_throw(const std::string& name) {
  const auto dtype = parse_dtype(name);
  if (!dtype) throw UsageError(fmt::format("--dtype {}: use float32 (fp32) or bfloat16 (bf16)", name));
  return *dtype;
}

void print_comparison(const std::string& label, const nlohmann::json& entry, double tolerance) {
  const nlohmann::json& error = entry["max_rel_error"];
  fmt::print("  {:<56} max_rel_error {:<12} {}\n", label, error.is_null() ? "non-finite" : fmt::format("{:.3e}", error.get<double>()),
             entry["within_tolerance"].get<bool>() ? "ok" : fmt::format("ABOVE tolerance {:.0e}", tolerance));
}

int run(const ConformanceOptions& o, const CLI::App& command) {
  // Only the options given: an absent one is each mechanism's default.
  const MechanismOptions options =
      given_mechanism_options(o.option_flags, o.option_assignments, given_options(command), false).values;
  const DType dtype = dtype_or_throw(o.dtype);
  const auto given = [&](const char* name) { return command.get_option(name)->count() > 0; };
  // "softmax_kv takes no --feature-map": an option the named mechanism does not declare.
  if (find_mechanism(o.mechanism) != nullptr) require_declared_options(options, o.mechanism);

  if (o.describe) {
    fmt::print("{}", describe_conformance_layout(o.mechanism, options));
    return 0;
  }
  // A folder option given as '' would otherwise read as not given at all.
  for (const char* folder : {"--generate", "--inputs", "--outputs"}) {
    if (given(folder) && command.get_option(folder)->as<std::string>().empty()) {
      throw UsageError(fmt::format("{} is empty; give a folder", folder));
    }
  }

  if (given("--generate")) {
    if (given("--device")) throw UsageError("--device chooses the kernels of a run; --generate only writes inputs");
    if (!o.inputs.empty() || !o.outputs.empty()) {
      throw UsageError("--generate writes inputs only; run the mechanism on them in a second call with --inputs and "
                       "--outputs");
    }
    if (o.overwrite) throw UsageError("--generate never replaces input files (no --overwrite): choose an empty folder");
    if (o.mechanism.empty() && options.find("feature_map") != nullptr) {
      throw UsageError("--feature-map with --generate needs --mechanism (each mechanism has its own maps)");
    }
    GenerateRequest request{o.generate, o.mechanism, o.shape, options, parse_seed("--seed", o.seed), dtype};
    const auto written = generate_conformance_inputs(request);
    for (const auto& path : written) fmt::print("wrote {}\n", path.string());
    const std::string mechanism = o.mechanism.empty() ? "ID" : o.mechanism;
    // The text options shape the inputs (performer's trig W has m/2 rows) or the run that reads them
    // (the stabiliser): the run must use them too. Sizes (m, N) it reads from the files.
    std::string run_options;
    for (const auto& [key, value] : options.values()) {
      if (std::holds_alternative<std::string>(value)) {
        run_options += fmt::format(" {} {}", OptionSpec{.key = key}.flag(), option_value_text(value));
      }
    }
    fmt::print("next: arch-bench conformance --mechanism {} --inputs {} --outputs OUT --dtype {}{}\n", mechanism,
               o.generate, dtype_name(dtype), run_options);
    return 0;
  }

  if (o.mechanism.empty()) throw UsageError("--mechanism is required (see `arch-bench list`)");
  if (o.inputs.empty() || o.outputs.empty()) {
    throw UsageError("give --inputs DIR and --outputs DIR (or --generate DIR to write seeded inputs first)");
  }
  for (const char* shaping : {"--batch", "--heads", "--length", "--dim", "--seed"}) {
    if (given(shaping)) {
      throw UsageError(fmt::format("{} shapes --generate only; a run takes every size from the input files (m from "
                                   "w.npy, N from A_log.npy)",
                                   shaping));
    }
  }
  // An option that shapes the drawn inputs (m, N, qk_scale) is --generate's; a run reads it from the files.
  for (const auto& [key, value] : options.values()) {
    for (const auto& [declarer, spec] : declared_option(key, "--option").declarations) {
      if (!spec.shapes_inputs) continue;
      throw UsageError(fmt::format("{} shapes --generate only; a run takes every size from the input files (m from "
                                   "w.npy, N from A_log.npy)",
                                   spec.flag()));
    }
  }
  ConformanceRequest request{o.mechanism, o.inputs, o.outputs, dtype, options, o.overwrite};
  request.device = o.device;
  const ConformanceResult result = run_conformance(request);
  const nlohmann::json& m = result.manifest;
  const double tolerance = m["tolerance"].get<double>();
  std::vector<std::string> axes;
  for (const auto& [axis, size] : m["axes"].items()) axes.push_back(fmt::format("{}={}", axis, size.get<std::int64_t>()));
  fmt::print("conformance {} {}{} ({})\n", o.mechanism, dtype_name(dtype), o.device == "cuda" ? " on cuda" : "",
             fmt::join(axes, " "));
  print_comparison("prefill_out vs reference_out", m["prefill_out"]["vs_reference"], tolerance);
  print_comparison("decode_out vs reference_out", m["decode_out"]["vs_reference"], tolerance);
  print_comparison("decode_out vs prefill_out", m["decode_out"]["vs_prefill"], tolerance);
  for (const auto& [name, state] : m["states"].items()) {
    if (state.contains("vs_reference")) {
      print_comparison(fmt::format("{} vs {}", name, state["reference_file"].get<std::string>()),
                       state["vs_reference"], tolerance);
    }
    if (state.contains("decode_vs_prefill")) {
      print_comparison(fmt::format("{} (decode vs prefill)", name), state["decode_vs_prefill"], tolerance);
    }
  }
  fmt::print("wrote {} files to {} ({})\n", result.written.size(), o.outputs, kConformanceManifest);
  if (!result.passed) {
    fmt::print(stderr, "conformance FAILED: an output is not finite or above the {} tolerance {:.0e}\n",
               dtype_name(dtype), tolerance);
  }
  return result.passed ? 0 : 1;
}

}  // namespace

void register_conformance_command(CLI::App& app, CommandContext& context) {
  auto o = std::make_shared<ConformanceOptions>();
  CLI::App* command = app.add_subcommand(
      "conformance",
      "Run a mechanism's CPU kernels (causal prefill, and decode token by token) and its fp64 reference on inputs "
      "read from .npy files, and write the outputs and final states as .npy plus conformance.json, so that a port "
      "to another framework can be checked against them. --generate DIR writes seeded inputs; --describe prints "
      "the file layout. Exit codes: 0 every output within the dtype tolerance of the reference, 1 outputs written "
      "but one is not (or is not finite), 2 bad input (nothing written).");
  command->add_option("--mechanism", o->mechanism, "Mechanism id (see `arch-bench list`)");
  command->add_option("--inputs", o->inputs, "Folder with the input .npy files ('<f4' or '<f8', C order)");
  command->add_option("--outputs", o->outputs, "Folder for the output .npy files and conformance.json");
  command->add_option("--dtype", o->dtype,
                      "Storage dtype: float32|fp32 or bfloat16|bf16; inputs are rounded to it first (fp32 "
                      "accumulation)")
      ->capture_default_str();
  // --feature-map, --favor-stabilizer, --features, --state-size, --qk-scale, ...: one flag per declared
  // option. Text options apply to a run and to --generate; number options (sizes, qk_scale) to --generate.
  add_mechanism_option_flags(*command, o->option_flags, o->option_assignments, false);
  command->add_flag("--overwrite", o->overwrite, "Replace existing output files (never done otherwise)");
  command->add_option("--device", o->device,
                      "Whose kernels run: cpu (default) or cuda (the GPU kernels of softmax_kv, linear_attention, "
                      "performer and mamba; the fp64 reference is the same; without a usable device: exit 2 with "
                      "the probe's reason)")
      ->capture_default_str();
  command->add_option("--generate", o->generate,
                      "Write seeded inputs for --mechanism (or for every mechanism with an adapter) into this "
                      "folder, as '<f4'; never replaces a file");
  command->add_option("--batch", o->shape.batch, "--generate: sequences")->capture_default_str();
  command->add_option("--heads,--query-heads", o->shape.heads, "--generate: heads")->capture_default_str();
  command->add_option("--length", o->shape.length, "--generate: tokens")->capture_default_str();
  command->add_option("--dim,--head-dim", o->shape.dim, "--generate: features per head (dk = dv); mamba: d_inner = "
                                                         "heads x dim")
      ->capture_default_str();
  command->add_option("--seed", o->seed, "--generate: seed (the same tokens `arch-bench run --seed` draws)")
      ->capture_default_str();
  command->add_flag("--describe", o->describe,
                    "Print the file layout (names, shapes, dtypes) of --mechanism, or of every mechanism, as Markdown");
  add_plugin_option(*command, o->plugins);
  command->callback([o, command, &context]() {
    load_plugins(o->plugins);
    context.exit_code = run(*o, *command);
  });
}

}  // namespace arch_bench
