#pragma once
// cuDNN, loaded at run time. arch-bench never links libcudnn: a binary built with the cuDNN variant
// (ARCH_BENCH_HAVE_CUDNN, cmake/Cudnn.cmake) still starts where the library is absent, and the
// kernels that need it (softmax_kv's fused attention, mechanisms/softmax_kv/cudnn_sdpa.hpp) say why
// they are unavailable instead. Plain C++ (dlopen): built in every configuration, so `list` and
// preflight report the library's state the same way everywhere.
#include <cstddef>
#include <string>

namespace arch_bench {

// Where the library is looked for: $ARCH_BENCH_CUDNN_LIB when set (a file, or a folder holding
// libcudnn.so.9, e.g. PyTorch's site-packages/nvidia/cudnn/lib), and only there, so an explicit
// choice is never silently replaced; otherwise libcudnn.so.9 on the loader's path (LD_LIBRARY_PATH,
// the ld.so cache).
inline constexpr const char* kCudnnLibraryEnv = "ARCH_BENCH_CUDNN_LIB";
inline constexpr const char* kCudnnSoname = "libcudnn.so.9";

struct CudnnLibrary {
  void* handle = nullptr;   // dlopen handle, never closed (cuDNN's own handles outlive any scope)
  std::size_t version = 0;  // cudnnGetVersion(): major * 10000 + minor * 100 + patch for cuDNN 9
  std::string path;         // what was opened (the soname, or the path from the environment)
  std::string reason;       // empty when usable; else why not, and what to do
  bool usable() const { return handle != nullptr; }
};

// Whether this build has the cuDNN variant at all (CUDA and the cudnn-frontend headers were found).
bool cudnn_built();

// The library, loaded once per process (the first call opens it; thread-safe). In a build without
// the variant it is never opened and the reason says so.
const CudnnLibrary& cudnn_library();

// One attempt to open the library from `env_value` (the variable's value, or nullptr when unset),
// as cudnn_library() does; what the tests call, with a path that does not exist.
CudnnLibrary open_cudnn_library(const char* env_value);

// "9.19.0" for 91900 (cuDNN 9's encoding).
std::string cudnn_version_text(std::size_t version);

// One line for `list` and preflight: "cuDNN 9.19.0 (libcudnn.so.9)" or the reason.
std::string cudnn_library_summary(const CudnnLibrary& library);

}  // namespace arch_bench
