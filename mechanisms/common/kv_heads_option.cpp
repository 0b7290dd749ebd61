#include "mechanisms/common/kv_heads_option.hpp"

#include <fmt/format.h>

#include "core/checked_size.hpp"

namespace arch_bench {

const OptionSpec& kv_heads_option() {
  static const OptionSpec spec{.key = "kv_heads",
                               .type = OptionType::integer,
                               .default_value = std::int64_t{0},
                               .help = "softmax_kv, sliding_window: K/V heads shared by the query heads (grouped-query "
                                       "attention; 1: multi-query), a divisor of --query-heads; 0 (default): one per "
                                       "query head. On `run`, a comma-separated list: one arm per value",
                               .minimum = 0.0,
                               .axis = true,
                               .every_mode_axis = true,
                               .shapes_inputs = true};
  return spec;
}

std::int64_t kv_heads_of(const Cell& cell) {
  const std::int64_t kv_heads = kv_heads_option().integer(cell.options);
  return kv_heads == 0 ? cell.heads : kv_heads;
}

std::int64_t query_group_of(const Cell& cell) {
  const std::int64_t kv_heads = kv_heads_of(cell);
  return kv_heads > 0 && cell.heads % kv_heads == 0 ? cell.heads / kv_heads : 1;
}

std::int64_t batch_kv_heads_of(const Cell& cell) { return checked_mul(cell.batch, kv_heads_of(cell)); }

std::optional<std::string> kv_heads_problem(const Cell& cell) {
  const std::int64_t kv_heads = kv_heads_of(cell);
  if (kv_heads < 1 || cell.heads % kv_heads != 0) {
    return fmt::format("--kv-heads {} does not divide --query-heads {} (each K/V head serves a whole group of "
                       "query heads; use a divisor of {}, or 0 for one K/V head per query head)",
                       kv_heads, cell.heads, cell.heads);
  }
  return std::nullopt;
}

}  // namespace arch_bench
