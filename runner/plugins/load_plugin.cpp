#include "runner/plugins/load_plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "runner/plugins/plugin_api.hpp"
#include "runner/plugins/self_check.hpp"
#include "runner/plugins/sha256.hpp"

namespace arch_bench {

namespace {

namespace fs = std::filesystem;

// Closes the library unless release()d: a refused plugin leaves nothing behind. Declared before
// the mechanisms it produced, so those are destroyed while their code is still mapped.
class LibraryHandle {
 public:
  explicit LibraryHandle(void* handle) : handle_(handle) {}
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
  ~LibraryHandle() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  void* get() const { return handle_; }
  void release() { handle_ = nullptr; }

 private:
  void* handle_;
};

class CollectingRegistrar final : public PluginRegistrar {
 public:
  void add(std::unique_ptr<Mechanism> mechanism) override {
    if (mechanism == nullptr) throw std::invalid_argument("PluginRegistrar::add(nullptr)");
    mechanisms.push_back(std::move(mechanism));
  }
  std::vector<std::unique_ptr<Mechanism>> mechanisms;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UsageError(fmt::format("--plugin {}: cannot be read", path.string()));
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// ELF magic and e_type ET_DYN (2 bytes at offset 16, little-endian on the hosts arch-bench runs on):
// a clear message for a file that is not a shared object at all, before dlopen's terser one.
bool is_shared_object(const std::string& bytes) {
  if (bytes.size() < 18 || bytes.compare(0, 4, "\x7f" "ELF") != 0) return false;
  const unsigned type = static_cast<unsigned char>(bytes[16]) | (static_cast<unsigned char>(bytes[17]) << 8);
  return type == 3;  // ET_DYN
}

bool valid_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 &&
         id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == std::string::npos;
}

void check_info(const Mechanism& mechanism, const std::string& path) {
  const MechanismInfo& info = mechanism.info();
  if (!valid_id(info.id)) {
    throw UsageError(fmt::format("--plugin {}: mechanism id '{}' must be 1 to 64 letters, digits, '_', '-' or '.'",
                                 path, info.id));
  }
  for (const std::string& backend : info.backends) {
    if (backend != "cpu" && backend != "cuda") {
      throw UsageError(fmt::format("--plugin {}: mechanism {} names backend '{}'; use cpu or cuda", path, info.id,
                                   backend));
    }
  }
}

}  // namespace

LoadedPlugin load_plugin(const std::string& path_text) {
  const fs::path given(path_text);
  std::error_code error;
  if (!fs::exists(given, error)) {
    throw UsageError(fmt::format("--plugin {}: no such file", path_text));
  }
  if (!fs::is_regular_file(given, error)) {
    throw UsageError(fmt::format("--plugin {}: not a regular file (give the plugin's .so file)", path_text));
  }
  const fs::path path = fs::canonical(given, error);
  const std::string shown = error ? path_text : path.string();
  const std::string bytes = read_bytes(given);
  if (!is_shared_object(bytes)) {
    throw UsageError(fmt::format("--plugin {}: not a shared object (no ELF ET_DYN header); give the library a "
                                 "plugin build produced (add_library(NAME MODULE ...))",
                                 shown));
  }
  // RTLD_NOW: a symbol the plugin needs and this arch-bench lacks (another SDK) fails here, named by
  // dlerror, not at the first call. RTLD_LOCAL: one plugin's symbols never satisfy another's.
  ::dlerror();
  LibraryHandle library(::dlopen(shown.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (library.get() == nullptr) {
    const char* reason = ::dlerror();
    throw UsageError(fmt::format("--plugin {}: cannot be loaded: {}", shown, reason != nullptr ? reason : "unknown"));
  }
  // dlsym on a handle searches the library and its own dependencies, not the executable: found
  // here, the registry is a second copy linked into the plugin (arch_bench_core instead of the SDK).
  void* own_registry = ::dlsym(library.get(), "_ZN10arch_bench14all_mechanismsEv");
  if (own_registry != nullptr && own_registry != reinterpret_cast<void*>(&all_mechanisms)) {
    throw UsageError(fmt::format("--plugin {}: carries its own copy of the arch-bench core (a second registry); link "
                                 "the plugin with arch_bench::mechanism_sdk only, not arch_bench::core",
                                 shown));
  }
  ::dlerror();
  void* entry_symbol = ::dlsym(library.get(), ARCH_BENCH_PLUGIN_ENTRY);
  if (entry_symbol == nullptr) {
    throw UsageError(fmt::format("--plugin {}: has no entry point {} (define it with ARCH_BENCH_PLUGIN(name, "
                                 "version, register_function) from runner/plugins/plugin_api.hpp)",
                                 shown, ARCH_BENCH_PLUGIN_ENTRY));
  }
  using Entry = const ArchBenchPluginV1* (*)();
  const ArchBenchPluginV1* plugin = reinterpret_cast<Entry>(entry_symbol)();
  if (plugin == nullptr || plugin->register_mechanisms == nullptr || plugin->name == nullptr ||
      plugin->version == nullptr) {
    throw UsageError(fmt::format("--plugin {}: {} returned no plugin description (name, version and register "
                                 "function are required)",
                                 shown, ARCH_BENCH_PLUGIN_ENTRY));
  }
  if (plugin->contract_version != kContractVersion) {
    throw UsageError(fmt::format("--plugin {}: built for mechanism contract version {}, but this arch-bench has "
                                 "version {}; rebuild the plugin against this arch-bench's installed SDK "
                                 "(find_package(arch_bench))",
                                 shown, plugin->contract_version, kContractVersion));
  }

  LoadedPlugin loaded;
  loaded.origin = PluginOrigin{shown, sha256_hex(bytes), plugin->name, plugin->version, plugin->contract_version};
  CollectingRegistrar registrar;
  int status = 0;
  try {
    status = plugin->register_mechanisms(&registrar);
  } catch (const std::exception& thrown) {
    throw UsageError(fmt::format("--plugin {}: its register function threw: {}", shown, thrown.what()));
  } catch (...) {
    throw UsageError(fmt::format("--plugin {}: its register function threw a non-standard exception", shown));
  }
  if (status != 0) {
    throw UsageError(fmt::format("--plugin {}: its register function refused to load (returned {})", shown, status));
  }
  if (registrar.mechanisms.empty()) {
    throw UsageError(fmt::format("--plugin {}: registers no mechanism", shown));
  }
  for (const auto& mechanism : registrar.mechanisms) check_info(*mechanism, shown);
  loaded.mechanisms = std::move(registrar.mechanisms);
  library.release();  // its code now backs the mechanisms: loaded for the life of the process
  return loaded;
}

std::vector<std::string> plugin_files(const std::vector<std::string>& option_values, const char* environment) {
  std::vector<std::string> candidates = option_values;
  if (environment != nullptr) {
    std::stringstream entries(environment);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (entry.empty()) continue;
      std::error_code error;
      if (!fs::is_directory(entry, error)) {
        candidates.push_back(entry);
        continue;
      }
      // A folder named like a plugin file is almost always a mistake (a build folder, a wrong path);
      // searched as a folder it would load nothing and say nothing. Refuse it as `--plugin` refuses
      // a folder.
      if (fs::path(entry).extension() == ".so") {
        throw UsageError(fmt::format("ARCH_BENCH_PLUGIN_PATH entry {} is a folder, not a plugin file: name the "
                                     "plugin's .so file, or a folder of plugins whose own name does not end in .so",
                                     entry));
      }
      std::vector<std::string> in_folder;
      for (const auto& file : fs::directory_iterator(entry, error)) {
        if (file.path().extension() == ".so") in_folder.push_back(file.path().string());
      }
      std::ranges::sort(in_folder);
      candidates.insert(candidates.end(), in_folder.begin(), in_folder.end());
    }
  }
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const std::string& candidate : candidates) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(candidate, error);
    if (seen.insert(error ? candidate : canonical.string()).second) files.push_back(candidate);
  }
  return files;
}

void load_plugins(const std::vector<std::string>& option_values) {
  for (const std::string& file : plugin_files(option_values, std::getenv("ARCH_BENCH_PLUGIN_PATH"))) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(file, error);
    const auto registered = loaded_plugins();
    if (!error && std::ranges::any_of(registered, [&](const PluginOrigin* p) { return p->path == canonical.string(); })) {
      continue;
    }
    LoadedPlugin plugin = load_plugin(file);
    for (const auto& mechanism : plugin.mechanisms) self_check_mechanism(*mechanism, plugin.origin.path);
    register_plugin_mechanisms(plugin.origin, std::move(plugin.mechanisms));
  }
}

}  // namespace arch_bench
