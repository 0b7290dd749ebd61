#pragma once
// Shared by the softmax_kv family's CPU tests (test_grouped_query_attention.cpp,
// test_sliding_window.cpp): the kernel sets this CPU runs, the CPU prefill and the fp64 reference
// over grouped K/V heads with an optional window (0: causal attention) for every row or one, and one row of
// every head.
#include <cstdint>
#include <vector>

#include "mechanisms/common/cpu_isa.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"
#include "mechanisms/softmax_kv/cpu.hpp"
#include "mechanisms/softmax_kv/reference.hpp"
#include "tests/support/head_rows.hpp"
#include "tests/support/mechanism_fixtures.hpp"

namespace arch_bench::testing {

inline std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::portable, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16}) {
    if (cpu_supports(isa)) isas.push_back(isa);
  }
  return isas;
}

// softmax_prefill over all in.tokens tokens, K/V heads of `group` query heads, keys (t - window, t].
template <class T>
std::vector<float> attention_prefill(const AttentionInputs& in, std::int64_t group, std::int64_t window,
                                     CpuIsa isa = cpu_isa()) {
  const std::int64_t kv = in.batch_heads / group;
  const auto q = to_storage<T>(in.q);
  std::vector<T> k(kv * in.tokens * in.dim), v(k.size()), out(q.size());
  store_kv_heads(in, in.k, group, in.tokens, in.tokens, k.data());
  store_kv_heads(in, in.v, group, in.tokens, in.tokens, v.data());
  softmax_prefill(in.batch_heads, in.tokens, in.dim, q.data(), k.data(), v.data(), out.data(), isa,
                  AttentionPattern{.group = group, .window = window});
  return to_floats(out);
}

// All rows of every query head against its group's K/V, in fp64 (window as above).
inline std::vector<float> attention_reference(const AttentionInputs& in, std::int64_t group, std::int64_t window) {
  std::vector<float> out;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const std::int64_t source = kv_source_head(h, group);
    const MatrixD ref = softmax_attention_reference(in.head_matrix(in.q, h, in.tokens),
                                                    in.head_matrix(in.k, source, in.tokens),
                                                    in.head_matrix(in.v, source, in.tokens), window);
    out.insert(out.end(), ref.data.begin(), ref.data.end());
  }
  return out;
}

// Row t alone of every query head against its group's K/V, in fp64: what a decode step at position t
// must produce, at O(t) per head where attention_reference's every row costs O(t^2).
inline std::vector<float> attention_reference_row(const AttentionInputs& in, std::int64_t group, std::int64_t window,
                                                  std::int64_t t) {
  std::vector<float> out;
  for (std::int64_t h = 0; h < in.batch_heads; ++h) {
    const std::int64_t source = kv_source_head(h, group);
    const std::vector<double> row = softmax_attention_row(in.head_matrix(in.q, h, in.tokens),
                                                          in.head_matrix(in.k, source, in.tokens),
                                                          in.head_matrix(in.v, source, in.tokens), t, window);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// Row t of every head of an [batch_heads, tokens, dim] output.
inline std::vector<float> row_of_every_head(const std::vector<float>& all, const AttentionInputs& in,
                                            std::int64_t t) {
  return row_of_every_head(all, in.batch_heads, in.tokens, t, in.dim);
}

}  // namespace arch_bench::testing
