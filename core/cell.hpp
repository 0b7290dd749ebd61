#pragma once
// One point of the workload matrix for one mechanism: the unit that is planned, measured and
// reported as one row.
#include <cstdint>
#include <string>

#include "core/checked_size.hpp"
#include "core/dtype.hpp"

namespace arch_bench {

enum class Phase { decode, prefill };
std::string phase_name(Phase phase);

// Knobs that only some mechanisms read. Each is a workload axis recorded in the report, so two
// runs with different options are never paired by `arch-bench diff`.
struct MechanismOptions {
  std::string feature_map = "elu";  // linear_attention: "elu" (elu+1) or "relu" (relu+1)
  std::int64_t features = 256;      // performer: number of random features m
  std::int64_t state_size = 16;     // mamba: N, the state size per channel
  // Multiplies the N(0,1) q and k draws. Attention logits q.k/sqrt(d) have unit spread at 1; the
  // norms |q|^2/sqrt(d) that FAVOR+'s variance grows with (as e^(|q~|^2+|k~|^2)/m) shrink as scale^2.
  double qk_scale = 1.0;
  // performer (favor+): where the eps of the features sits. "causal" (default): relative to each
  // token's own largest feature, keys kept against a running max (decode-safe). "published": as
  // performer-pytorch's softmax_kernel and google-research's FAVOR+, after subtracting max_i w_i.q~
  // per query and, for keys, the key maximum over the whole sequence (mechanisms/performer/reference.hpp).
  std::string favor_stabilizer = "causal";
};

struct Cell {
  std::string mechanism;
  Phase phase = Phase::decode;
  std::int64_t sequence_length = 0;  // decode: tokens already in context; prefill: tokens processed
  std::int64_t batch = 1;
  std::int64_t heads = 8;
  std::int64_t head_dim = 64;
  DType dtype = DType::bfloat16;
  MechanismOptions options;

  // batch * heads: the number of independent (sequence, head) problems (SizeOverflow when it
  // does not fit in 64 bits).
  std::int64_t batch_heads() const { return checked_mul(batch, heads); }
};

}  // namespace arch_bench
