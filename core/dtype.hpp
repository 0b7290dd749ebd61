#pragma once
// Storage dtypes of a workload cell. Accumulation is always fp32; references are fp64.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace arch_bench {

enum class DType { float32, bfloat16 };

// Accepts the names users type: "bfloat16"/"bf16", "float32"/"fp32"/"f32".
std::optional<DType> parse_dtype(std::string_view name);
// The canonical name written to reports ("bfloat16", "float32").
std::string dtype_name(DType dtype);
std::size_t dtype_bytes(DType dtype);
// Largest accepted max_rel_error of a kernel against the fp64 reference computed on the same
// (storage-rounded) inputs. bf16 stores outputs with an 8-bit mantissa (unit roundoff 2^-9 = 0.2%);
// the margin covers fp32 accumulation over 8k+ tokens in a different order than the reference.
double dtype_tolerance(DType dtype);

}  // namespace arch_bench
