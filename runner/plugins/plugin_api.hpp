#pragma once
// The plugin contract: what an out-of-tree mechanism library (a shared object loaded by
// `arch-bench --plugin FILE`) exports, and what it may call. Part of the installed mechanism SDK
// (find_package(arch_bench) + arch_bench::mechanism_sdk); see docs/adding-a-mechanism.md, "Plugins".
//
// A plugin is C++ code compiled against these headers and run inside the arch-bench process: its
// Mechanism objects are used by the harness as the built-ins are. It links no arch-bench library:
// the out-of-line functions of the SDK headers (make_attention_inputs, Allocator::allocate, ...)
// are resolved against the arch-bench executable when it is loaded, so there is one registry, one
// allocator accounting and one OpenMP runtime in the process.
//
// The one exported symbol is a C function returning a plain C struct, so the host reads the
// plugin's contract version before any C++ object crosses the boundary.
#include <memory>

#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Raised whenever a header of the SDK changes in a way a compiled plugin would notice: a class
// layout, a virtual function, a signature, the meaning of a field. A plugin built for another
// version is refused at load time (exit 2): rebuild it against the installed SDK.
// 2: PreparedCell::cpu_kernel_isa(); 3: option declarations (core/options.hpp); 4:
// Mechanism::predicted_process_bytes() (a new virtual: the vtable changed) and
// OptionSpec::every_mode_axis (its layout changed)
inline constexpr int kContractVersion = 4;

// Handed to a plugin's register function; the host owns what is added.
class PluginRegistrar {
 public:
  virtual ~PluginRegistrar() = default;
  // Registers one mechanism. Its info().id must be new (no built-in, no other plugin's id).
  virtual void add(std::unique_ptr<Mechanism> mechanism) = 0;
};

}  // namespace arch_bench

extern "C" {

// Read by the host before anything else; every field is a C type.
struct ArchBenchPluginV1 {
  int contract_version;   // kContractVersion the plugin was compiled with
  const char* name;       // the plugin's name, e.g. "window-softmax"
  const char* version;    // the plugin's own version, recorded in every row of its mechanisms
  // Adds the plugin's mechanisms; returns 0, or non-zero to refuse loading (throwing is also refused).
  int (*register_mechanisms)(arch_bench::PluginRegistrar* registrar);
};

}  // extern "C"

// The exported entry point's name (dlsym).
#define ARCH_BENCH_PLUGIN_ENTRY "arch_bench_plugin_v1"

// Defines the entry point. Use once per plugin, at namespace scope:
//   ARCH_BENCH_PLUGIN("my-plugin", "1.2.0", register_my_mechanisms)
#define ARCH_BENCH_PLUGIN(NAME, VERSION, REGISTER)                                          \
  extern "C" __attribute__((visibility("default"))) const ArchBenchPluginV1*                \
  arch_bench_plugin_v1() {                                                                  \
    static const ArchBenchPluginV1 plugin{arch_bench::kContractVersion, NAME, VERSION, REGISTER}; \
    return &plugin;                                                                         \
  }
