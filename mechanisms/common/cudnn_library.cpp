#include "mechanisms/common/cudnn_library.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

#include <fmt/format.h>

namespace arch_bench {

bool cudnn_built() {
#if ARCH_BENCH_HAVE_CUDNN
  return true;
#else
  return false;
#endif
}

std::string cudnn_version_text(std::size_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

CudnnLibrary open_cudnn_library(const char* env_value) {
  CudnnLibrary library;
  const bool from_env = env_value != nullptr && *env_value != '\0';
  library.path = from_env ? env_value : kCudnnSoname;
  struct stat info {};
  if (from_env && ::stat(env_value, &info) == 0 && S_ISDIR(info.st_mode)) {
    library.path = fmt::format("{}/{}", env_value, kCudnnSoname);
  }
  // RTLD_LOCAL: cuDNN's symbols stay out of the global namespace (the cudnn-frontend resolves each
  // through this handle); RTLD_NOW: a library with missing dependencies fails here, with its reason.
  void* handle = ::dlopen(library.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    library.reason =
        from_env ? fmt::format("{}={} cannot be opened ({}); point it at libcudnn.so.9 or its folder, or unset it",
                               kCudnnLibraryEnv, env_value, error ? error : "unknown error")
                 : fmt::format("{} is not on the loader path ({}); install cuDNN 9, or set {} to libcudnn.so.9 or "
                               "its folder (e.g. PyTorch's site-packages/nvidia/cudnn/lib)",
                               kCudnnSoname, error ? error : "unknown error", kCudnnLibraryEnv);
    return library;
  }
  using GetVersion = std::size_t (*)();
  const auto get_version = reinterpret_cast<GetVersion>(::dlsym(handle, "cudnnGetVersion"));
  if (get_version == nullptr) {
    library.reason = fmt::format("{} has no cudnnGetVersion: not a cuDNN library", library.path);
    ::dlclose(handle);
    return library;
  }
  const std::size_t version = get_version();
  // The cudnn-frontend headers are written against cuDNN 9's backend API.
  if (version / 10000 != 9) {
    library.reason = fmt::format("{} is cuDNN {}; the fused-attention variant needs cuDNN 9", library.path,
                                 cudnn_version_text(version));
    ::dlclose(handle);
    return library;
  }
  library.handle = handle;
  library.version = version;
  return library;
}

const CudnnLibrary& cudnn_library() {
  static const CudnnLibrary library = [] {
    if (!cudnn_built()) {
      CudnnLibrary absent;
      absent.reason =
          "this build has no cuDNN variant (no CUDA, or the cudnn-frontend headers were not found at configure time: "
          "run scripts/fetch-cudnn-frontend.sh, then re-run cmake)";
      return absent;
    }
    return open_cudnn_library(std::getenv(kCudnnLibraryEnv));
  }();
  return library;
}

std::string cudnn_library_summary(const CudnnLibrary& library) {
  if (!library.usable()) return library.reason;
  return fmt::format("cuDNN {} ({})", cudnn_version_text(library.version), library.path);
}

}  // namespace arch_bench
