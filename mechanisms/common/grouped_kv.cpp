#include "mechanisms/common/grouped_kv.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/common/kv_heads_option.hpp"

namespace arch_bench {

std::map<std::string, NpyArray> generate_grouped_attention_inputs(const ConformanceShape& shape,
                                                                  const MechanismOptions& options,
                                                                  std::uint64_t seed, DType dtype) {
  const Cell cell = generated_cell(shape, options, dtype);
  if (const auto problem = kv_heads_problem(cell)) throw UsageError(*problem);
  std::map<std::string, NpyArray> tensors = generate_attention_inputs(shape, options, seed, dtype);
  const std::int64_t kv_heads = kv_heads_of(cell), group = query_group_of(cell);
  if (group == 1) return tensors;
  const std::int64_t per_head = shape.length * shape.dim;
  for (const char* name : {"k", "v"}) {
    const NpyArray& all = tensors.at(name);
    std::vector<double> kept;
    kept.reserve(static_cast<std::size_t>(shape.batch * kv_heads * per_head));
    for (std::int64_t kv = 0; kv < shape.batch * kv_heads; ++kv) {
      const auto first = all.values.begin() + kv * group * per_head;
      kept.insert(kept.end(), first, first + per_head);
    }
    tensors[name] = make_array({shape.batch, kv_heads, shape.length, shape.dim}, kept, NpyDtype::float32);
  }
  return tensors;
}

void require_kv_heads_divide_heads(const ConformanceInputs& inputs, const std::string& mechanism) {
  const std::int64_t heads = inputs.axis("heads"), kv_heads = inputs.axis("kv_heads");
  if (kv_heads < 1 || heads % kv_heads != 0) {
    throw UsageError(fmt::format("{}: k.npy and v.npy have {} K/V heads, which do not divide q.npy's {} heads "
                                 "(each K/V head serves a whole group of query heads)",
                                 mechanism, kv_heads, heads));
  }
}

}  // namespace arch_bench
