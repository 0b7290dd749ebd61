#pragma once
// The state-capacity (recall) probe's seam (docs/design.md, "Capacity"): a fixed state has a finite
// memory, and speed alone hides it. A mechanism that offers a probe writes n (key, value) pairs into a
// fresh state of one head, one token each, with its own feature map and gates at their neutral
// setting, then reads every stored key back (q = k_i) after all n writes. The landscape mode turns
// the retrieved values into mean cosine similarity and relative L2 error against the stored ones,
// for n = 16, 32, ... up to 4 x head_dim. The probe is the mechanism's math in fp64 (it measures the
// mechanism, not a kernel's rounding).
#include <cstdint>
#include <string>

#include "mechanisms/common/matrix.hpp"

namespace arch_bench {

class CapacityProbe {
 public:
  virtual ~CapacityProbe() = default;
  // keys [n, d], unit-norm rows; values [n, dv]. Returns the values read back [n, dv], row i read
  // with the query that retrieves key i (q = k_i, or what the mechanism's convention needs).
  virtual MatrixD recall(const MatrixD& keys, const MatrixD& values) const = 0;
  // What a reader must know about the probe's setting (e.g. softmax's query scale tau); may be empty.
  virtual std::string setting() const { return {}; }
  // Width of the keys the state is addressed with, for heads of `head_dim` (default head_dim; mamba
  // addresses its state with B/C of the state size N).
  virtual std::int64_t key_dim(std::int64_t head_dim) const { return head_dim; }
};

}  // namespace arch_bench
