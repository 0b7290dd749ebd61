#pragma once
// Shared helpers for mechanism tests: seeded inputs in storage dtype, comparisons.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench::testing {

inline Cell small_cell(std::int64_t heads, std::int64_t dim, std::int64_t length, DType dtype,
                       Phase phase = Phase::decode) {
  Cell cell;
  cell.mechanism = "test";
  cell.phase = phase;
  cell.sequence_length = length;
  cell.batch = 1;
  cell.heads = heads;
  cell.head_dim = dim;
  cell.dtype = dtype;
  return cell;
}

// A cell of `mechanism` (prefill unless told).
inline Cell mechanism_cell(const std::string& mechanism, std::int64_t heads, std::int64_t dim, std::int64_t length,
                           DType dtype, Phase phase = Phase::prefill, std::int64_t batch = 1) {
  Cell cell = small_cell(heads, dim, length, dtype, phase);
  cell.mechanism = mechanism;
  cell.batch = batch;
  return cell;
}

template <class T>
std::vector<T> to_storage(const std::vector<float>& values) {
  std::vector<T> out(values.size());
  store(values.data(), static_cast<std::int64_t>(values.size()), out.data());
  return out;
}

template <class T>
std::vector<float> to_floats(const std::vector<T>& values) {
  std::vector<float> out(values.size());
  std::transform(values.begin(), values.end(), out.begin(), [](T x) { return to_float(x); });
  return out;
}

// Tokens [0, length) of every row of `in`: the context a decode step at position `length` follows.
inline AttentionInputs first_tokens(const AttentionInputs& in, std::int64_t length) {
  AttentionInputs context = in;
  context.tokens = length;
  context.q.clear(), context.k.clear(), context.v.clear();
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    context.q.insert(context.q.end(), in.q_at(bh, 0), in.q_at(bh, length));
    context.k.insert(context.k.end(), in.k_at(bh, 0), in.k_at(bh, length));
    context.v.insert(context.v.end(), in.v_at(bh, 0), in.v_at(bh, length));
  }
  return context;
}

// Token t of every row of `in`, [batch_heads, dim] each (the decode layout), and row t of each
// row's prefill output `out` ([batch_heads, tokens, dim]): a decode step's inputs and what it
// should return.
struct DecodeToken {
  std::vector<float> q, k, v, expected;
};
inline DecodeToken decode_token(const AttentionInputs& in, std::int64_t t, const std::vector<float>& out) {
  DecodeToken token;
  for (std::int64_t bh = 0; bh < in.batch_heads; ++bh) {
    token.q.insert(token.q.end(), in.q_at(bh, t), in.q_at(bh, t) + in.dim);
    token.k.insert(token.k.end(), in.k_at(bh, t), in.k_at(bh, t) + in.dim);
    token.v.insert(token.v.end(), in.v_at(bh, t), in.v_at(bh, t) + in.dim);
    const float* row = out.data() + (bh * in.tokens + t) * in.dim;
    token.expected.insert(token.expected.end(), row, row + in.dim);
  }
  return token;
}

// max |a - b| / max |b|
inline double relative_max_error(const std::vector<float>& a, const std::vector<float>& b) {
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(a[i]) - double(b[i])));
    max_ref = std::max(max_ref, std::fabs(double(b[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace arch_bench::testing
