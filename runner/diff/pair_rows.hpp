#pragma once
// Pairing the rows of two reports: the same cell of the same mechanism arm in both runs.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch_bench {

// What makes two rows the same measurement: (mechanism, variant, phase, sequence_length, batch,
// heads, head_dim, dtype, options). Role is left out on purpose: a mechanism promoted from
// candidate to baseline is still the same measurement.
struct RowKey {
  std::string mechanism;
  std::string variant;  // "" when the report has none
  std::string phase;
  std::int64_t sequence_length = 0, batch = 0, heads = 0, head_dim = 0;
  std::string dtype;
  nlohmann::json options = nlohmann::json::object();
  // 0 for the first row with this key in its report, 1 for the second, ...: a report that repeats
  // a key has its k-th row paired with the other report's k-th.
  int occurrence = 0;

  std::string id() const;  // canonical, for equality and ordering
  bool operator==(const RowKey& other) const { return id() == other.id(); }
};

// The key of one row of metrics.rows (schema-valid; variant and options may be absent).
RowKey row_key(const nlohmann::json& row, int occurrence = 0);

// One pair, or a row that only one report has (the other pointer is null).
struct RowPair {
  RowKey key;
  const nlohmann::json* old_row = nullptr;
  const nlohmann::json* new_row = nullptr;
};

// In the old report's row order, then the rows only the new report has, in its order. The
// pointers point into `old_rows` / `new_rows`, which must outlive the result.
std::vector<RowPair> pair_rows(const nlohmann::json& old_rows, const nlohmann::json& new_rows);

// A label per key for tables: mechanism[variant], phase and L always; batch, heads, head_dim,
// dtype and options only when they vary between the keys given; "#2" on a repeated key.
std::vector<std::string> row_labels(const std::vector<RowKey>& keys);

}  // namespace arch_bench
