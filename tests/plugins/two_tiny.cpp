// A well-behaved plugin with two mechanisms (registration of more than one, and of a version).
#include "tiny_mechanism.hpp"

namespace {
int register_two(arch_bench::PluginRegistrar* registrar) {
  registrar->add(std::make_unique<tiny::TinyMechanism>("tiny_a", false));
  registrar->add(std::make_unique<tiny::TinyMechanism>("tiny_b", false));
  return 0;
}
}  // namespace

ARCH_BENCH_PLUGIN("two-tiny", "2.3.4", register_two)
