#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// --- built-in registration --------------------------------------------------------------------
//
// A built-in mechanism registers itself with one line at the bottom of mechanisms/<id>/mechanism.cpp,
// at namespace scope:
//
//   ARCH_BENCH_REGISTER_MECHANISM(50, make_retnet)
//
// `rank` places it in the listing (`arch-bench list`, the landscape's arms, the report's order):
// built-ins are sorted by rank, then by id, whatever order the linker ran the files' initialisers
// in. The built-ins take 10, 20, ... 90 (softmax_kv ... rwkv7); a new mechanism takes a rank of
// its own (after 90 to come last). The registry is no list to edit: the executables link the core
// library whole (CMakeLists.txt, arch_bench_core_whole), so no registering object file is dropped.
using MechanismFactory = std::unique_ptr<Mechanism> (*)();
// What the macro calls, during static initialisation; returns true. Throws std::logic_error when
// the registry was already built (a registration after main() started).
bool register_builtin_mechanism(int rank, MechanismFactory factory);

#define ARCH_BENCH_REGISTRY_CONCAT_INNER(a, b) a##b
#define ARCH_BENCH_REGISTRY_CONCAT(a, b) ARCH_BENCH_REGISTRY_CONCAT_INNER(a, b)
#define ARCH_BENCH_REGISTER_MECHANISM(rank, factory)                                                   \
  namespace {                                                                                          \
  [[maybe_unused]] const bool ARCH_BENCH_REGISTRY_CONCAT(arch_bench_registered_mechanism_, __LINE__) = \
      ::arch_bench::register_builtin_mechanism((rank), (factory));                                     \
  }

// Every mechanism, in registry order: the built-ins (by rank), then plugin mechanisms in loading order.
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
