#pragma once
// What a mechanism's cuda.hpp declares its launchers and its CUDA prepare function with, and no
// CUDA header: the .cpp files that include it (mechanism.cpp, the tests) compile in every build.
// CUstream_st is the struct behind cudaStream_t; bf16 is arch_bench::bf16, bit-identical to
// __nv_bfloat16 (a launcher's .cu reinterprets it).
#include <cstdint>
#include <memory>

#include "core/bf16.hpp"

struct CUstream_st;

namespace arch_bench {

class Backend;
class PreparedCell;

}  // namespace arch_bench
