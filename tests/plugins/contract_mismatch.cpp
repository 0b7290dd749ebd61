// A plugin built for a contract version this arch-bench does not have (the entry point written by
// hand, as a plugin built against another SDK would carry it).
#include "runner/plugins/plugin_api.hpp"

namespace {
int register_nothing(arch_bench::PluginRegistrar*) { return 0; }
}  // namespace

extern "C" __attribute__((visibility("default"))) const ArchBenchPluginV1* arch_bench_plugin_v1() {
  static const ArchBenchPluginV1 plugin{arch_bench::kContractVersion + 1, "from-the-future", "9.9", register_nothing};
  return &plugin;
}
