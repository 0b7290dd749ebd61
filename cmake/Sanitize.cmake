# -DARCH_BENCH_SANITIZE=ON: AddressSanitizer and UndefinedBehaviorSanitizer on the core library and
# everything that links it (arch-bench, the tests, arch-bench-micro). Any undefined behaviour stops
# the program (-fno-sanitize-recover), so a test that hits one fails. For CPU builds
# (-DARCH_BENCH_CUDA=OFF); device code is not instrumented. Slow: a separate build folder.
option(ARCH_BENCH_SANITIZE "Build with -fsanitize=address,undefined" OFF)
if(ARCH_BENCH_SANITIZE)
  set(_arch_bench_sanitize -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_compile_options(arch_bench_core PUBLIC $<$<COMPILE_LANGUAGE:CXX>:${_arch_bench_sanitize}>)
  target_link_options(arch_bench_core PUBLIC -fsanitize=address,undefined)
  message(STATUS "arch-bench: AddressSanitizer + UndefinedBehaviorSanitizer ON")
endif()
