#include "core/dtype.hpp"

namespace arch_bench {

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "bfloat16" || name == "bf16") return DType::bfloat16;
  if (name == "float32" || name == "fp32" || name == "f32") return DType::float32;
  return std::nullopt;
}

std::string dtype_name(DType dtype) { return dtype == DType::bfloat16 ? "bfloat16" : "float32"; }

std::size_t dtype_bytes(DType dtype) { return dtype == DType::bfloat16 ? 2 : 4; }

double dtype_tolerance(DType dtype) { return dtype == DType::bfloat16 ? 1e-2 : 1e-4; }

}  // namespace arch_bench
