#include "core/backends/cuda/cublas_library.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <filesystem>

#include <fmt/format.h>

namespace arch_bench {

namespace {

// The toolkit's lib folder: where the libcudart this process was linked with lives. cuBLAS ships
// beside it, so the two come from one toolkit even when several are installed.
std::string cuda_runtime_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&cudaRuntimeGetVersion), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  const std::filesystem::path runtime(info.dli_fname);
  return runtime.is_absolute() ? runtime.parent_path().string() : std::string{};
}

template <class Function>
bool find(void* handle, const char* name, Function& function, std::string& reason) {
  function = reinterpret_cast<Function>(::dlsym(handle, name));
  if (function == nullptr && reason.empty()) reason = fmt::format("it has no {}", name);
  return function != nullptr;
}

CublasLibrary open_cublas() {
  CublasLibrary library;
  const std::string soname = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  const std::string folder = cuda_runtime_folder();
  void* handle = nullptr;
  std::string errors;
  for (const std::string& candidate : {folder.empty() ? std::string{} : folder + "/" + soname, soname}) {
    if (candidate.empty()) continue;
    // RTLD_LOCAL: its symbols stay out of the global namespace; RTLD_NOW: missing dependencies fail here.
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      library.path = candidate;
      break;
    }
    const char* error = ::dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", error ? error : candidate + ": unknown error");
  }
  if (handle == nullptr) {
    library.reason = fmt::format("cuBLAS ({}) cannot be loaded: {}", soname, errors);
    return library;
  }
  std::string missing;
  CublasLibrary found = library;
  const bool complete = find(handle, "cublasCreate_v2", found.create, missing) &
                        find(handle, "cublasDestroy_v2", found.destroy, missing) &
                        find(handle, "cublasSetStream_v2", found.set_stream, missing) &
                        find(handle, "cublasGemmEx", found.gemm_ex, missing);
  if (!complete) {
    library.reason = fmt::format("{} is not a usable cuBLAS: {}", library.path, missing);
    ::dlclose(handle);
    return library;
  }
  return found;
}

}  // namespace

const CublasLibrary& cublas_library() {
  static const CublasLibrary library = open_cublas();
  return library;
}

}  // namespace arch_bench
