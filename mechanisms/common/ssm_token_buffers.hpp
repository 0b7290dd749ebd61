#pragma once
// The five per-token inputs of a Mamba or Mamba-2 CPU cell in tracked storage T: x (Mamba's u),
// dt_raw and z, and B and C. Their layouts are the mechanisms' (Mamba: per channel, B and C per
// batch element; Mamba-2: dt_raw per head, B and C per group); the buffers, how they are filled and
// how they are listed are the same. View is the kernels' pointer set (MambaTokens, Mamba2Tokens).
#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "core/backends/allocator.hpp"
#include "core/backends/backend.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

template <class T, class View>
struct SsmTokenBuffers {
  // Room for values filled in by the cell: x and z `channels` values, dt_raw `dt_count`, B and C
  // `bc_count` each.
  SsmTokenBuffers(Allocator& allocator, std::size_t channels, std::size_t dt_count, std::size_t bc_count)
      : x(allocator, channels), dt_raw(allocator, dt_count), z(allocator, channels), B(allocator, bc_count),
        C(allocator, bc_count) {}

  // A copy of the given values: the drawn fp32 inputs (rounded through T, exactly: they are
  // representable) or values already staged in T.
  template <class U>
  SsmTokenBuffers(Allocator& allocator, const std::vector<U>& x_values, const std::vector<U>& dt_values,
                  const std::vector<U>& z_values, const std::vector<U>& B_values, const std::vector<U>& C_values)
      : SsmTokenBuffers(allocator, x_values.size(), dt_values.size(), B_values.size()) {
    copy(x_values, x);
    copy(dt_values, dt_raw);
    copy(z_values, z);
    copy(B_values, B);
    copy(C_values, C);
  }

  View view() const { return {x.data(), dt_raw.data(), z.data(), B.data(), C.data()}; }
  void add_spans(std::vector<ByteSpan>& spans) const {
    spans.insert(spans.end(), {x.byte_span(), dt_raw.byte_span(), z.byte_span(), B.byte_span(), C.byte_span()});
  }

  Buffer<T> x, dt_raw, z, B, C;

 private:
  template <class U>
  static void copy(const std::vector<U>& from, Buffer<T>& to) {
    if constexpr (std::is_same_v<U, float>) {
      store(from.data(), static_cast<std::int64_t>(from.size()), to.data());
    } else {
      std::copy(from.begin(), from.end(), to.data());
    }
  }
};

}  // namespace arch_bench
