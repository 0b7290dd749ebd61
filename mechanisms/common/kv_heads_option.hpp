#pragma once
// Grouped-query attention (GQA) and multi-query attention (MQA): `kv_heads` K/V heads shared by the
// query heads, heads / kv_heads query heads per K/V head. Declared once, here, so that every
// attention mechanism that reads it (softmax_kv, sliding_window) takes the same flag, default and
// checks, and lays out its K/V the same way:
//   q, out  [batch, heads,    tokens, dim]
//   k, v    [batch, kv_heads, tokens, dim]
//   query head h of a batch reads K/V head h / (heads / kv_heads).
// Flattened over the batch, query head bh (= b * heads + h) reads K/V head bh / group, since heads
// is a multiple of the group.
#include <cstdint>
#include <optional>
#include <string>

#include "core/cell.hpp"
#include "core/options.hpp"

namespace arch_bench {

// kv_heads: integer >= 0, 0 (the default) meaning as many K/V heads as query heads (multi-head
// attention, the default experiment unchanged); 1 is multi-query attention. An axis: `run` takes a
// list. It sizes the k and v inputs, so `conformance --generate` takes it and a conformance run reads
// it from the k file.
const OptionSpec& kv_heads_option();

// The cell's K/V heads per sequence: the option, or cell.heads when it is 0.
std::int64_t kv_heads_of(const Cell& cell);

// Query heads per K/V head (heads / kv_heads): 1 for multi-head attention.
std::int64_t query_group_of(const Cell& cell);

// batch * kv_heads: the K/V heads of the whole batch (SizeOverflow when it does not fit).
std::int64_t batch_kv_heads_of(const Cell& cell);

// Why the cell's kv_heads does not fit its query heads (it must divide them), or nullopt. Mechanisms
// return it from unsupported(), so `run` and `conformance --generate` refuse it (exit 2) before
// anything is written.
std::optional<std::string> kv_heads_problem(const Cell& cell);

}  // namespace arch_bench
