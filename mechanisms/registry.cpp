#include "mechanisms/registry.hpp"

#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "mechanisms/linear_attention/mechanism.hpp"
#include "mechanisms/mamba/mechanism.hpp"
#include "mechanisms/performer/mechanism.hpp"
#include "mechanisms/softmax_kv/mechanism.hpp"
#include "mechanisms/retnet/mechanism.hpp"
#include "mechanisms/gated_deltanet/mechanism.hpp"
#include "mechanisms/rwkv/mechanism.hpp"
#include "core/errors.hpp"

namespace arch_bench {

namespace {
std::vector<std::unique_ptr<Mechanism>> make_registry() {
  std::vector<std::unique_ptr<Mechanism>> registry;
  // The one list of mechanisms: add a line here for a new mechanisms/<id>/ folder.
  registry.push_back(make_softmax_kv());
  registry.push_back(make_linear_attention());
  registry.push_back(make_mamba());
  registry.push_back(make_performer());
  registry.push_back(make_retnet());
  registry.push_back(make_gated_deltanet());
  registry.push_back(make_rwkv4());
  registry.push_back(make_rwkv6());
  registry.push_back(make_rwkv7());
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
