#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Every mechanism, in registry order: the built-ins, then plugin mechanisms in loading order.
// The span is valid until the next register_plugin_mechanisms() call (plugins are loaded before
// any plan is built, so no caller holds one across a registration).
std::span<const std::unique_ptr<Mechanism>> all_mechanisms();
// The mechanism with this id, or nullptr.
const Mechanism* find_mechanism(std::string_view id);

// Where a plugin mechanism came from (runner/plugins/), recorded in the report rows it produces.
struct PluginOrigin {
  std::string path;     // the file as loaded (absolute)
  std::string sha256;   // of the file's bytes, lower-case hex
  std::string name;     // the plugin's declared name
  std::string version;  // the plugin's declared version
  int contract_version = 0;
};

// The plugin that registered mechanism `id`, or nullptr for a built-in (or an unknown id).
const PluginOrigin* plugin_origin(std::string_view id);
// Every plugin whose mechanisms were registered, in loading order.
std::vector<const PluginOrigin*> loaded_plugins();

// Adds one plugin's mechanisms, all or none: throws UsageError (naming the plugin file) when an id
// is empty, repeated, or already registered (a built-in or another plugin's).
void register_plugin_mechanisms(const PluginOrigin& origin, std::vector<std::unique_ptr<Mechanism>> mechanisms);

}  // namespace arch_bench
