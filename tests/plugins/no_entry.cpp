// A shared object that is not a plugin: it has no arch_bench_plugin_v1 entry point.
extern "C" int not_an_arch_bench_plugin() { return 42; }
