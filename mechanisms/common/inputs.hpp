#pragma once
// Seeded q/k/v for a cell. Baseline and candidates of one run draw the same tokens (same seed and
// shape), so their outputs and costs are compared on identical inputs. Values are already rounded
// through the storage dtype: the fp64 reference sees exactly what the kernel sees.
#include <cstdint>
#include <vector>

#include "mechanisms/common/matrix.hpp"
#include "core/cell.hpp"

namespace arch_bench {

struct AttentionInputs {
  std::int64_t batch_heads = 0;
  std::int64_t tokens = 0;  // decode: L + 1 (context plus the new token); prefill: L
  std::int64_t dim = 0;
  // Layout [batch_heads, tokens, dim], float values exactly representable in the storage dtype.
  std::vector<float> q, k, v;

  const float* q_at(std::int64_t bh, std::int64_t t) const { return q.data() + (bh * tokens + t) * dim; }
  const float* k_at(std::int64_t bh, std::int64_t t) const { return k.data() + (bh * tokens + t) * dim; }
  const float* v_at(std::int64_t bh, std::int64_t t) const { return v.data() + (bh * tokens + t) * dim; }
  // One head's q/k/v rows [0, rows) widened to fp64, for the references.
  MatrixD head_matrix(const std::vector<float>& tensor, std::int64_t bh, std::int64_t rows) const;
  // Rows [first, first + rows) of every head of q, k or v, as [batch_heads, rows, dim] (what a GPU
  // cell uploads: the new token of a decode step, or a decode cell's context).
  std::vector<float> head_rows(const std::vector<float>& tensor, std::int64_t first, std::int64_t rows) const;
};

// qk_scale, a harness option every mechanism runs with (mechanisms/option_catalog.hpp): multiplies
// the N(0,1) q and k draws. Attention logits q.k/sqrt(d) have unit spread at 1; the norms
// |q|^2/sqrt(d) that FAVOR+'s variance grows with (as e^(|q~|^2+|k~|^2)/m) shrink as scale^2.
const OptionSpec& qk_scale_option();

// Draws N(0, 1) q/k/v for `tokens` tokens of every (batch, head) of the cell (q and k times qk_scale).
AttentionInputs make_attention_inputs(const Cell& cell, std::int64_t tokens, std::uint64_t seed);

// Copies float values into storage of type T (values are representable, so this is exact).
template <class T>
void store(const float* source, std::int64_t count, T* destination);

// Token t of every (batch, head) row of q, k, v into [batch_heads, dim] storage (the decode layout).
template <class T>
void store_token(const AttentionInputs& inputs, std::int64_t t, T* q, T* k, T* v) {
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    store(inputs.q_at(bh, t), inputs.dim, q + bh * inputs.dim);
    store(inputs.k_at(bh, t), inputs.dim, k + bh * inputs.dim);
    store(inputs.v_at(bh, t), inputs.dim, v + bh * inputs.dim);
  }
}

// Tokens [0, length) of every row of q, k, v in storage, [batch_heads, length, dim], and room for
// their output: what a decode cell's context prefill reads and writes (staging memory outside the
// tracked allocator: it is set-up).
template <class T>
struct StoredContext {
  std::vector<T> q, k, v;
  std::vector<T> out;  // the context prefill's output, [batch_heads, length, dim]: written, never read
};
template <class T>
StoredContext<T> store_context(const AttentionInputs& inputs, std::int64_t length) {
  const std::int64_t count = inputs.batch_heads * length * inputs.dim;
  StoredContext<T> context{std::vector<T>(count), std::vector<T>(count), std::vector<T>(count), std::vector<T>(count)};
  for (std::int64_t bh = 0; bh < inputs.batch_heads; ++bh) {
    const std::int64_t offset = bh * length * inputs.dim;
    store(inputs.q_at(bh, 0), length * inputs.dim, context.q.data() + offset);
    store(inputs.k_at(bh, 0), length * inputs.dim, context.k.data() + offset);
    store(inputs.v_at(bh, 0), length * inputs.dim, context.v.data() + offset);
  }
  return context;
}

}  // namespace arch_bench
