#pragma once
// The inputs of a grouped-query cell (kv_heads_option.hpp), drawn from the same seeded tokens as every
// other mechanism's: make_attention_inputs draws q, k and v for all `heads` query heads, and K/V head
// j of a batch takes the k and v rows drawn for query head j * group, the first of its group. So with
// kv_heads = heads every head keeps its own K/V (exactly the multi-head inputs), and the fp64
// references read the same rows through kv_source_head.
#include <cstdint>
#include <map>
#include <string>

#include "mechanisms/common/conformance_adapter.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

// The (batch, head) row of AttentionInputs whose k and v the query head `bh` (batch * heads + h)
// reads: the first query head of its group.
inline std::int64_t kv_source_head(std::int64_t bh, std::int64_t group) { return bh - bh % group; }

// Tokens [0, rows) of k or v for every K/V head, [batch_heads / group, rows, dim], in storage T.
template <class T>
void store_kv_heads(const AttentionInputs& inputs, const std::vector<float>& tensor, std::int64_t group,
                    std::int64_t rows, std::int64_t stride_rows, T* out) {
  for (std::int64_t kv = 0; kv < inputs.batch_heads / group; ++kv) {
    const float* source = tensor.data() + kv * group * inputs.tokens * inputs.dim;
    store(source, rows * inputs.dim, out + kv * stride_rows * inputs.dim);
  }
}

// Token t of k or v for every K/V head, [batch_heads / group, dim] (the decode layout).
template <class T>
void store_kv_token(const AttentionInputs& inputs, const std::vector<float>& tensor, std::int64_t group,
                    std::int64_t t, T* out) {
  for (std::int64_t kv = 0; kv < inputs.batch_heads / group; ++kv) {
    store(tensor.data() + (kv * group * inputs.tokens + t) * inputs.dim, inputs.dim, out + kv * inputs.dim);
  }
}

// Rows [first, first + rows) of k or v for every K/V head, [batch_heads / group, rows, dim] as floats
// (what a GPU cell uploads).
inline std::vector<float> kv_head_rows(const AttentionInputs& inputs, const std::vector<float>& tensor,
                                       std::int64_t group, std::int64_t first, std::int64_t rows) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(inputs.batch_heads / group * rows * inputs.dim));
  for (std::int64_t kv = 0; kv < inputs.batch_heads / group; ++kv) {
    const float* begin = tensor.data() + (kv * group * inputs.tokens + first) * inputs.dim;
    out.insert(out.end(), begin, begin + rows * inputs.dim);
  }
  return out;
}

// q [batch, heads, length, dim] and k, v [batch, kv_heads, length, dim] for `conformance --generate`:
// the tokens `arch-bench run --seed seed` draws for this shape, k and v of each group's first head.
std::map<std::string, NpyArray> generate_grouped_attention_inputs(const ConformanceShape& shape,
                                                                  const MechanismOptions& options,
                                                                  std::uint64_t seed, DType dtype);

// Throws UsageError naming the files when the k/v files' kv_heads axis does not divide q's heads.
void require_kv_heads_divide_heads(const ConformanceInputs& inputs, const std::string& mechanism);

}  // namespace arch_bench
