#pragma once
// Loading out-of-tree mechanism libraries (`--plugin FILE`, ARCH_BENCH_PLUGIN_PATH): dlopen, the
// contract check, registration and a self-check, all before any plan is built. Every refusal is a
// UsageError (exit 2, nothing measured) naming the file and what to do.
#include <memory>
#include <string>
#include <vector>

#include "mechanisms/registry.hpp"

namespace arch_bench {

struct LoadedPlugin {
  PluginOrigin origin;
  std::vector<std::unique_ptr<Mechanism>> mechanisms;
};

// Opens one plugin file and collects its mechanisms without registering them (nothing global
// changes, so tests can load bad plugins in-process). The library stays loaded on success.
LoadedPlugin load_plugin(const std::string& path);

// The plugin files to load: each --plugin value, then each entry of ARCH_BENCH_PLUGIN_PATH
// (colon-separated; a folder stands for the *.so files in it, in name order); a file named twice
// (same canonical path) is loaded once. `environment` is the variable's value (nullptr: unset).
// Throws UsageError for a folder entry whose name ends in .so (a plugin file was meant).
std::vector<std::string> plugin_files(const std::vector<std::string>& option_values, const char* environment);

// Loads, self-checks and registers every plugin of plugin_files(values, getenv(ARCH_BENCH_PLUGIN_PATH)).
// Called by each command that takes --plugin, before it reads the registry. Idempotent for a file
// already registered.
void load_plugins(const std::vector<std::string>& option_values);

}  // namespace arch_bench
