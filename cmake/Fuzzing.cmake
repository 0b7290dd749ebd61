# -DARCH_BENCH_FUZZ=ON (clang only): libFuzzer targets for every reader of untrusted input, built
# with AddressSanitizer and UndefinedBehaviorSanitizer. scripts/fuzz.sh configures a build folder
# with this and builds only the fuzz targets; see docs/user-guide.md, "Fuzzing and sanitizers".
#   fuzz_report   result reports, one or two: json_input -> schema validation -> hardware and identity
#                 comparison -> diff of the two (strict and relaxed gate) -> merge of the two as shards
#   fuzz_profile  profiles: json_input -> schema validation -> typed profile
#   fuzz_npy      .npy files: header and data parsing, then an encode/parse round trip
#   fuzz_cli      option parsing and checking of run, diff and validate (nothing measured or written)
option(ARCH_BENCH_FUZZ "Build the libFuzzer targets (clang)" OFF)
if(ARCH_BENCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ARCH_BENCH_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # The core library is instrumented for coverage and checked by the sanitizers; each target links
  # the objects it needs from it and libFuzzer's main.
  set(_arch_bench_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                             -fno-omit-frame-pointer -g)
  target_compile_options(arch_bench_core PUBLIC $<$<COMPILE_LANGUAGE:CXX>:${_arch_bench_fuzz_flags}>)
  foreach(_target fuzz_report fuzz_profile fuzz_npy fuzz_cli)
    add_executable(${_target} ${PROJECT_SOURCE_DIR}/tests/fuzz/${_target}.cpp)
    target_link_libraries(${_target} PRIVATE arch_bench_core_whole)
    target_link_options(${_target} PRIVATE -fsanitize=fuzzer,address,undefined)
  endforeach()
  add_custom_target(fuzz_targets DEPENDS fuzz_report fuzz_profile fuzz_npy fuzz_cli)
endif()
