#include "mechanisms/registry.hpp"

#include <vector>

#include "mechanisms/linear_attention/mechanism.hpp"
#include "mechanisms/mamba/mechanism.hpp"
#include "mechanisms/performer/mechanism.hpp"
#include "mechanisms/softmax_kv/mechanism.hpp"
#include "mechanisms/retnet/mechanism.hpp"
#include "mechanisms/gated_deltanet/mechanism.hpp"
#include "mechanisms/rwkv/mechanism.hpp"

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
}  // namespace

std::span<const std::unique_ptr<Mechanism>> all_mechanisms() {
  static const std::vector<std::unique_ptr<Mechanism>> registry = make_registry();
  return registry;
}

const Mechanism* find_mechanism(std::string_view id) {
  for (const auto& mechanism : all_mechanisms()) {
    if (mechanism->info().id == id) return mechanism.get();
  }
  return nullptr;
}

std::string state_kind_name(StateKind kind) {
  return kind == StateKind::explicit_history ? "explicit_history" : "fixed_state";
}

}  // namespace arch_bench
