// `arch-bench preflight --profile ID`: checks this machine against a profile for the plan the same
// options would give `run`, prints one line per check, optionally writes the JSON report, and
// exits 0 (pass, warnings allowed) or 1 (some check failed); bad input is 2.
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "runner/cli/commands.hpp"
#include "runner/cli/run_options.hpp"
#include "runner/plugins/load_plugin.hpp"
#include "runner/preflight/preflight.hpp"
#include "runner/preflight/preflight_report.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/report/atomic_write.hpp"
#include "runner/report/output_path.hpp"
#include "runner/report/schema_validation.hpp"
#include "runner/present/printable_text.hpp"

namespace arch_bench {

namespace {

struct PreflightOptions {
  RunOptions plan;   // --mode, --sequence-lengths, ... as for `run`, and --profile
  std::string json;  // --json FILE
};

int preflight(const PreflightOptions& options, const std::string& command_line) {
  const Mode& mode = find_mode_or_throw(options.plan.mode);
  const Profile profile = load_profile(options.plan.profile);
  const ResolvedSettings settings = resolve_settings(options.plan, mode.defaults().workload, &profile);
  if (!options.json.empty()) {
    check_output_file(options.json, "--json", false, "choose another --json file, or remove it first");
  }
  const PreflightResult result = run_preflight(profile, mode, settings.workload, read_machine_facts());
  print_preflight(stdout, profile, result);
  if (!options.json.empty()) {
    const nlohmann::json document = preflight_report_json(profile, settings.workload, result, command_line);
    const std::vector<std::string> errors = schema_errors(document, "preflight");
    if (!errors.empty()) {
      fmt::print(stderr, "error: the preflight report does not match schemas/preflight.schema.json; nothing was "
                         "written:\n");
      for (const std::string& error : errors) fmt::print(stderr, "  {}\n", escape_control_bytes(error));
      return 1;
    }
    write_file_atomically(options.json, document.dump(2) + "\n", false);
    fmt::print("wrote {}\n", escape_control_bytes(options.json));
  }
  return result.passed() ? 0 : 1;
}

}  // namespace

void register_preflight_command(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<PreflightOptions>();
  CLI::App* command = app.add_subcommand(
      "preflight",
      "Check this machine against a profile for the plan the same options would give `run`: backend and "
      "kernels present, device count and compute capability, driver/runtime versions, free memory against the "
      "plan's predicted peak bytes x the profile's margin, dtype support, CPU governor and GPU clocks. One line "
      "per check (PASS/WARN/FAIL/SKIP). Exit 0 pass (warnings allowed), 1 some check failed, 2 bad input.");
  command->add_option("--profile", options->plan.profile,
                      "Profile to check: ID (profiles/ID.json in ./profiles or the source tree) or a .json file")
      ->type_name("ID|FILE")
      ->required();
  command->add_option("--json", options->json,
                      "Also write the report (schemas/preflight.schema.json) to FILE, atomically; an existing file "
                      "is never overwritten")
      ->type_name("FILE");
  add_plan_options(*command, options->plan);
  command->callback([options, command, &context]() {
    options->plan.given = given_options(*command);
    load_plugins(options->plan.plugins);
    context.exit_code = preflight(*options, quoted_command_line(context.argv));
  });
}

}  // namespace arch_bench
