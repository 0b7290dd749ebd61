// A plugin whose mechanism's check() throws.
#include "tiny_mechanism.hpp"

namespace {
int register_throwing(arch_bench::PluginRegistrar* registrar) {
  registrar->add(std::make_unique<tiny::TinyMechanism>("tiny_throwing", true));
  return 0;
}
}  // namespace

ARCH_BENCH_PLUGIN("throwing-check", "0.1", register_throwing)
