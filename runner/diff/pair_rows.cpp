#include "runner/diff/pair_rows.hpp"

#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "mechanisms/option_catalog.hpp"
#include "mechanisms/registry.hpp"

namespace arch_bench {

namespace {
std::string string_or_empty(const nlohmann::json& row, const char* name) {
  const auto it = row.find(name);
  return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t integer_or_zero(const nlohmann::json& row, const char* name) {
  const auto it = row.find(name);
  return it != row.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

std::string compact_options(const nlohmann::json& options) {
  std::string text;
  for (const auto& [name, value] : options.items()) {
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", name,
                        value.is_string() ? value.get<std::string>() : value.dump());
  }
  return text;
}

// The options that tell two rows of `mechanism` apart: the keys it and the harness declare, a
// declared key that is absent read as its default. Reports before the declarations recorded all five
// options on every row (softmax_kv with a feature_map and a state_size), and before
// --favor-stabilizer none: both pair with today's, which record only what the mechanism reads. A
// mechanism that is not registered (a plugin not loaded) keeps every key it recorded.
nlohmann::json options_that_matter(const std::string& mechanism, const nlohmann::json& options) {
  if (!options.is_object() || find_mechanism(mechanism) == nullptr) return options;
  nlohmann::json kept = nlohmann::json::object();
  for (const OptionSpec& spec : option_specs_of(mechanism)) {
    const auto it = options.find(spec.key);
    if (it != options.end() && spec.type == OptionType::number && it->is_number()) kept[spec.key] = it->get<double>();
    else if (it != options.end()) kept[spec.key] = *it;
    else std::visit([&](const auto& held) { kept[spec.key] = held; }, spec.default_value);
  }
  return kept;
}

// Keys by id, with their occurrence, in order of first appearance.
std::vector<RowKey> keys_of(const nlohmann::json& rows) {
  std::vector<RowKey> keys;
  std::map<std::string, int> seen;
  for (const nlohmann::json& row : rows) {
    const std::string base = row_key(row).id();
    keys.push_back(row_key(row, seen[base]++));
  }
  return keys;
}
}  // namespace

std::string RowKey::id() const {
  // json::dump writes object members in sorted order, so equal options give equal text.
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", mechanism, variant, phase, sequence_length, batch, heads,
                     head_dim, dtype, options.dump(), occurrence);
}

RowKey row_key(const nlohmann::json& row, int occurrence) {
  // The fields are named as the report names them; one a row lacks reads as "" or 0.
  static constexpr std::pair<const char*, std::string RowKey::*> kTextFields[] = {
      {"mechanism", &RowKey::mechanism}, {"variant", &RowKey::variant}, {"phase", &RowKey::phase},
      {"dtype", &RowKey::dtype}};
  static constexpr std::pair<const char*, std::int64_t RowKey::*> kIntegerFields[] = {
      {"sequence_length", &RowKey::sequence_length}, {"batch", &RowKey::batch}, {"heads", &RowKey::heads},
      {"head_dim", &RowKey::head_dim}};
  RowKey key;
  for (const auto& [name, field] : kTextFields) key.*field = string_or_empty(row, name);
  for (const auto& [name, field] : kIntegerFields) key.*field = integer_or_zero(row, name);
  // Copying and dumping `options` recurse once per level of nesting: read_report refuses documents
  // nested deeper than kMaxJsonDepth (runner/report/json_input.hpp), so this stays shallow.
  if (const auto it = row.find("options"); it != row.end() && it->is_object()) key.options = *it;
  key.options = options_that_matter(key.mechanism, key.options);
  key.occurrence = occurrence;
  return key;
}

std::vector<RowPair> pair_rows(const nlohmann::json& old_rows, const nlohmann::json& new_rows) {
  const std::vector<RowKey> old_keys = keys_of(old_rows);
  const std::vector<RowKey> new_keys = keys_of(new_rows);
  std::map<std::string, std::size_t> new_index;
  for (std::size_t i = 0; i < new_keys.size(); ++i) new_index.emplace(new_keys[i].id(), i);

  std::vector<RowPair> pairs;
  std::set<std::size_t> paired_new;
  for (std::size_t i = 0; i < old_keys.size(); ++i) {
    RowPair pair{old_keys[i], &old_rows[i], nullptr};
    if (const auto it = new_index.find(old_keys[i].id()); it != new_index.end()) {
      pair.new_row = &new_rows[it->second];
      paired_new.insert(it->second);
    }
    pairs.push_back(std::move(pair));
  }
  for (std::size_t i = 0; i < new_keys.size(); ++i) {
    if (!paired_new.contains(i)) pairs.push_back(RowPair{new_keys[i], nullptr, &new_rows[i]});
  }
  return pairs;
}

std::vector<std::string> row_labels(const std::vector<RowKey>& keys) {
  std::set<std::int64_t> batches, heads, head_dims;
  std::set<std::string> dtypes;
  for (const RowKey& key : keys) {
    batches.insert(key.batch);
    heads.insert(key.heads);
    head_dims.insert(key.head_dim);
    dtypes.insert(key.dtype);
  }
  // Options are shown only where they tell apart keys that would otherwise read the same.
  std::map<std::string, std::set<std::string>> options_per_label;
  auto base_label = [&](const RowKey& key) {
    std::string label = key.mechanism + (key.variant.empty() ? "" : "[" + key.variant + "]");
    label += fmt::format(" {} L={}", key.phase, key.sequence_length);
    if (batches.size() > 1) label += fmt::format(" B={}", key.batch);
    if (heads.size() > 1) label += fmt::format(" H={}", key.heads);
    if (head_dims.size() > 1) label += fmt::format(" d={}", key.head_dim);
    if (dtypes.size() > 1) label += " " + key.dtype;
    return label;
  };
  for (const RowKey& key : keys) options_per_label[base_label(key)].insert(key.options.dump());

  std::vector<std::string> labels;
  for (const RowKey& key : keys) {
    std::string label = base_label(key);
    if (options_per_label[label].size() > 1) label += " {" + compact_options(key.options) + "}";
    if (key.occurrence > 0) label += fmt::format(" #{}", key.occurrence + 1);
    labels.push_back(std::move(label));
  }
  return labels;
}

}  // namespace arch_bench
