#pragma once
// What the three RWKV conformance adapters share: the per-token input files ([batch, heads, length,
// dim], the kernels' [batch_heads, tokens, dim] order), storage copies, and the decode loop.
#include <array>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/kernels.hpp"
#include "mechanisms/common/conformance_adapter.hpp"

namespace arch_bench {

inline const std::vector<std::string> kRwkvTokenAxes = {"batch", "heads", "length", "dim"};
inline const std::vector<std::string> kRwkvParameterAxes = {"heads", "dim"};

// The file (stem) each per-token input is read from; "" for those a generation does not read.
inline std::array<std::string, kRwkvInputCount> rwkv_input_files(RwkvVersion version) {
  switch (version) {
    case RwkvVersion::v4: return {"", "k", "v", "", "", ""};
    case RwkvVersion::v6: return {"r", "k", "v", "time_decay_t", "", ""};
    case RwkvVersion::v7: return {"r", "k", "v", "w_raw", "kappa", "iclr"};
  }
  return {};
}

// The per-token inputs of the files, rounded to the storage dtype (parameters are left to the caller).
inline RwkvInputs rwkv_inputs_from_files(const ConformanceInputs& files, DType dtype, RwkvVersion version) {
  RwkvInputs in;
  in.version = version;
  in.heads = files.axis("heads");
  in.batch_heads = files.axis("batch") * in.heads;
  in.tokens = files.axis("length");
  in.dim = files.axis("dim");
  const auto names = rwkv_input_files(version);
  for (int i = 0; i < kRwkvInputCount; ++i) {
    if (!names[i].empty()) in.sequence[i] = to_storage_values(files.at(names[i]), dtype);
  }
  return in;
}

// The per-token inputs `--generate` writes for a generation (the draw of `arch-bench run --seed`).
inline std::map<std::string, NpyArray> rwkv_generated_files(const RwkvInputs& drawn, std::int64_t batch) {
  std::map<std::string, NpyArray> files;
  const auto names = rwkv_input_files(drawn.version);
  for (int i = 0; i < kRwkvInputCount; ++i) {
    if (names[i].empty()) continue;
    files.emplace(names[i], make_array({batch, drawn.heads, drawn.tokens, drawn.dim}, drawn.sequence[i],
                                       NpyDtype::float32));
  }
  return files;
}

template <class T>
struct RwkvStorage {
  explicit RwkvStorage(const RwkvInputs& in) {
    for (int i = 0; i < kRwkvInputCount; ++i) sequence[i] = to_storage<T>(in.sequence[i]);
  }
  RwkvTokens<T> view() const {
    return {sequence[kRwkvR].data(),     sequence[kRwkvK].data(),     sequence[kRwkvV].data(),
            sequence[kRwkvDecay].data(), sequence[kRwkvKappa].data(), sequence[kRwkvIclr].data()};
  }
  std::array<std::vector<T>, kRwkvInputCount> sequence;
};

// Decode steps token by token: step(tokens of one token [batch_heads, dim], out [batch_heads, dim]).
template <class T, class Step>
std::vector<T> rwkv_decode_loop(const RwkvInputs& in, const RwkvStorage<T>& storage, Step step) {
  const std::int64_t bh = in.batch_heads, dim = in.dim, length = in.tokens;
  std::array<std::vector<T>, kRwkvInputCount> token;
  for (int i = 0; i < kRwkvInputCount; ++i) {
    if (!storage.sequence[i].empty()) token[i].resize(bh * dim);
  }
  std::vector<T> out(bh * length * dim), o_t(bh * dim);
  const RwkvTokens<T> x{token[kRwkvR].data(),     token[kRwkvK].data(),     token[kRwkvV].data(),
                        token[kRwkvDecay].data(), token[kRwkvKappa].data(), token[kRwkvIclr].data()};
  for (std::int64_t t = 0; t < length; ++t) {
    for (int i = 0; i < kRwkvInputCount; ++i) {
      if (!token[i].empty()) gather_token(storage.sequence[i].data(), bh, length, dim, t, token[i].data());
    }
    step(x, o_t.data());
    scatter_token(o_t.data(), bh, length, dim, t, out.data());
  }
  return out;
}

}  // namespace arch_bench
