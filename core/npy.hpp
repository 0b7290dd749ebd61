#pragma once
// A small codec of NumPy .npy files (format versions 1.0, 2.0 and 3.0), enough for
// `arch-bench conformance`: little-endian float32 ('<f4') and float64 ('<f8') arrays in C order.
// Everything is held as float64 in memory; the dtype says what the file held or will hold.
//
// Every problem with a file (missing, bad magic, unsupported version or dtype, Fortran order,
// truncated or trailing data) is an NpyError, a UsageError (exit 2) whose message names the file
// and says what was expected instead.
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace arch_bench {

class NpyError : public UsageError {
 public:
  using UsageError::UsageError;
};

enum class NpyDtype { float32, float64 };
std::string npy_descr(NpyDtype dtype);  // "<f4" | "<f8"

struct NpyArray {
  std::vector<std::int64_t> shape;  // () is a scalar: one element
  std::vector<double> values;       // C order, shape's product of them
  NpyDtype dtype = NpyDtype::float64;

  std::int64_t size() const;  // product of the shape
};

// "(2, 8, 128, 64)", as NumPy prints a shape.
std::string shape_text(const std::vector<std::int64_t>& shape);

// Parses the bytes of a .npy file; `name` (usually the path) prefixes every error message.
NpyArray parse_npy(const std::string& bytes, const std::string& name);

// The bytes of a .npy file holding `array` as array.dtype ('<f4' rounds every value to float32).
// `version` 1 or 2; 0 picks 1.0 unless the header needs 2.0 (over 65535 bytes), as NumPy does.
// The header is padded so the data starts at a multiple of 64 bytes.
std::string encode_npy(const NpyArray& array, int version = 0);

// Reading and writing the files themselves: runner/conformance/npy_files.hpp.

}  // namespace arch_bench
