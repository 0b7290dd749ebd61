// A plugin whose mechanism takes a built-in's id.
#include "tiny_mechanism.hpp"

namespace {
int register_clash(arch_bench::PluginRegistrar* registrar) {
  registrar->add(std::make_unique<tiny::TinyMechanism>("softmax_kv", false));
  return 0;
}
}  // namespace

ARCH_BENCH_PLUGIN("clashing-id", "0.1", register_clash)
