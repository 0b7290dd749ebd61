// libFuzzer target: a .npy input of `conformance`. Bytes -> parse_npy; what parses must encode and
// parse back to the same shape and values. Only an NpyError (exit 2) may leave.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace arch_bench;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  NpyArray array;
  try {
    array = parse_npy(bytes, "fuzz.npy");
  } catch (const NpyError&) {
    return 0;
  }
  const NpyArray back = parse_npy(encode_npy(array), "round-trip.npy");
  if (back.shape != array.shape || back.dtype != array.dtype || back.values.size() != array.values.size()) {
    __builtin_trap();
  }
  for (std::size_t i = 0; i < array.values.size(); ++i) {
    const double a = array.values[i], b = back.values[i];
    if (!(a == b || (std::isnan(a) && std::isnan(b)))) __builtin_trap();
  }
  return 0;
}
