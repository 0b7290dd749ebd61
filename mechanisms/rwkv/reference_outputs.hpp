#pragma once
// The fp64 reference outputs of one head of any RWKV generation, as every prepared cell checks them
// (the CPU cells' Policy::reference and the CUDA cells, cuda_cells.cpp): rows [0, rows) of head bh.
#include <cstdint>

#include "mechanisms/common/matrix.hpp"
#include "mechanisms/rwkv/inputs.hpp"
#include "mechanisms/rwkv/rwkv4/reference.hpp"
#include "mechanisms/rwkv/rwkv6/reference.hpp"
#include "mechanisms/rwkv/rwkv7/reference.hpp"

namespace arch_bench {

inline MatrixD rwkv_reference_outputs(const RwkvInputs& in, std::int64_t bh, std::int64_t rows) {
  switch (in.version) {
    case RwkvVersion::v4:
      // The fp64 running-max recurrence (O(T)); the tests hold it to the naive formula.
      return rwkv4_wkv_stable(in.head_matrix(kRwkvK, bh, rows), in.head_matrix(kRwkvV, bh, rows),
                              in.parameter(in.w, bh), in.parameter(in.u, bh))
          .outputs;
    case RwkvVersion::v6:
      return rwkv6_reference(in.head_matrix(kRwkvR, bh, rows), in.head_matrix(kRwkvK, bh, rows),
                             in.head_matrix(kRwkvV, bh, rows), in.head_matrix(kRwkvDecay, bh, rows),
                             in.parameter(in.u, bh))
          .outputs;
    case RwkvVersion::v7:
      return rwkv7_reference(in.head_matrix(kRwkvR, bh, rows), in.head_matrix(kRwkvDecay, bh, rows),
                             in.head_matrix(kRwkvK, bh, rows), in.head_matrix(kRwkvV, bh, rows),
                             in.head_matrix(kRwkvKappa, bh, rows), in.head_matrix(kRwkvIclr, bh, rows))
          .outputs;
  }
  return MatrixD(0, 0);
}

}  // namespace arch_bench
