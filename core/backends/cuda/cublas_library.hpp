#pragma once
// cuBLAS, loaded at run time, for the one thing arch-bench asks of it: the bf16 GEMM ceiling of a GPU
// run (gpu_ceilings.cpp). Linking it cost every process start, GPU or not: libcublasLt is 540 MB,
// and the loader mapped and relocated it (364k relative relocations) before main() -- 0.3-0.4 s of
// wall time per start on the 2-vCPU CI machines, paid twice by every command that re-executes
// itself for its OpenMP spin (runner/main.cpp), and by each of the test suite's CLI runs.
#include <cublas_v2.h>

#include <string>

namespace arch_bench {

// cublasGemmEx with a cublasComputeType_t, the library's own symbol (C++ code also sees an inline
// overload taking a cudaDataType, which the header forwards to this one).
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                        const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  CublasGemmEx gemm_ex = nullptr;
  std::string path;    // what was opened
  std::string reason;  // empty when usable; else why not
  bool usable() const { return gemm_ex != nullptr; }
};

// The library matching the cuBLAS headers this binary was compiled with (libcublas.so.<major>),
// from the folder of the CUDA runtime this process loaded, else from the loader's path; opened once
// per process (thread-safe), never closed.
const CublasLibrary& cublas_library();

}  // namespace arch_bench
