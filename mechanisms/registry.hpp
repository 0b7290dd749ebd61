#pragma once
#include <memory>
#include <span>
#include <string_view>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Every mechanism, in registry order.
std::span<const std::unique_ptr<Mechanism>> all_mechanisms();
// The mechanism with this id, or nullptr.
const Mechanism* find_mechanism(std::string_view id);

}  // namespace arch_bench
