#include "mechanisms/registry.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace {

struct BuiltinRegistration {
  int rank;
  MechanismFactory factory;
};
// Filled by ARCH_BENCH_REGISTER_MECHANISM during static initialisation (a function-local static, so
// that it exists before the first registrar runs, whichever file that is in).
std::vector<BuiltinRegistration>& builtin_registrations() {
  static std::vector<BuiltinRegistration> registrations;
  return registrations;
}
bool registry_built = false;

// The built-ins by rank, then id: the same order whatever order the initialisers ran in.
std::vector<std::unique_ptr<Mechanism>> make_registry() {
  struct Ranked {
    int rank;
    std::unique_ptr<Mechanism> mechanism;
  };
  std::vector<Ranked> ranked;
  for (const BuiltinRegistration& registration : builtin_registrations()) {
    ranked.push_back({registration.rank, registration.factory()});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.mechanism->info().id < b.mechanism->info().id;
  });
  std::vector<std::unique_ptr<Mechanism>> registry;
  std::set<std::string> ids;
  for (Ranked& entry : ranked) {
    const std::string& id = entry.mechanism->info().id;
    if (id.empty() || !ids.insert(id).second) {
      throw std::logic_error(fmt::format("built-in mechanism id '{}' is empty or registered twice", id));
    }
    registry.push_back(std::move(entry.mechanism));
  }
  registry_built = true;
  return registry;
}

struct Registry {
  std::vector<std::unique_ptr<Mechanism>> mechanisms = make_registry();
  // Plugin mechanisms' origins, by mechanism id. The libraries are never unloaded (their code runs
  // the destructors of the mechanisms above, at exit), so the mechanisms outlive nothing they need.
  std::vector<std::unique_ptr<PluginOrigin>> plugins;
  std::map<std::string, const PluginOrigin*, std::less<>> origin_of;
};

Registry& registry() {
  static Registry registry;
  return registry;
}
}  // namespace

bool register_builtin_mechanism(int rank, MechanismFactory factory) {
  if (registry_built) throw std::logic_error("a built-in mechanism registered after the registry was built");
  builtin_registrations().push_back({rank, factory});
  return true;
}

std::span<const std::unique_ptr<Mechanism>> all_mechanisms() { return registry().mechanisms; }

const Mechanism* find_mechanism(std::string_view id) {
  for (const auto& mechanism : all_mechanisms()) {
    if (mechanism->info().id == id) return mechanism.get();
  }
  return nullptr;
}

const PluginOrigin* plugin_origin(std::string_view id) {
  const auto& origins = registry().origin_of;
  const auto found = origins.find(id);
  return found == origins.end() ? nullptr : found->second;
}

std::vector<const PluginOrigin*> loaded_plugins() {
  std::vector<const PluginOrigin*> plugins;
  for (const auto& plugin : registry().plugins) plugins.push_back(plugin.get());
  return plugins;
}

void register_plugin_mechanisms(const PluginOrigin& origin, std::vector<std::unique_ptr<Mechanism>> mechanisms) {
  std::set<std::string> ids;
  for (const auto& mechanism : mechanisms) {
    const std::string& id = mechanism->info().id;
    if (id.empty()) throw UsageError(fmt::format("--plugin {}: a mechanism has an empty id", origin.path));
    if (!ids.insert(id).second) {
      throw UsageError(fmt::format("--plugin {}: registers mechanism '{}' twice", origin.path, id));
    }
    if (find_mechanism(id) == nullptr) continue;
    const PluginOrigin* other = plugin_origin(id);
    throw UsageError(other == nullptr
                         ? fmt::format("--plugin {}: mechanism id '{}' is a built-in mechanism's; give the plugin's "
                                       "mechanism another id",
                                       origin.path, id)
                         : fmt::format("--plugin {}: mechanism id '{}' is already registered by plugin {}", origin.path,
                                       id, other->path));
  }
  Registry& r = registry();
  r.plugins.push_back(std::make_unique<PluginOrigin>(origin));
  for (auto& mechanism : mechanisms) {
    r.origin_of.emplace(mechanism->info().id, r.plugins.back().get());
    r.mechanisms.push_back(std::move(mechanism));
  }
}

std::string state_kind_name(StateKind kind) {
  return kind == StateKind::explicit_history ? "explicit_history" : "fixed_state";
}

}  // namespace arch_bench
