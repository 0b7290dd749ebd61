#pragma once
// The namespace that keeps each ISA variant's copy of an inline helper apart (kernel_variant.hpp
// explains the variants). A kernel file is compiled once per variant with ARCH_BENCH_KERNEL_VARIANT
// set to the variant's name; every other file is compiled as the build variant. A header whose
// inline functions kernels compile wraps them (never its types: a type's name must be one across
// variants) in ARCH_BENCH_KERNEL_HELPERS_BEGIN / _END, an inline namespace named after the variant,
// so callers still write arch_bench::name and each variant's copy has its own symbol.
#ifndef ARCH_BENCH_KERNEL_VARIANT
#define ARCH_BENCH_KERNEL_VARIANT build
#endif

#define ARCH_BENCH_KERNEL_CONCAT2(a, b) a##b
#define ARCH_BENCH_KERNEL_CONCAT(a, b) ARCH_BENCH_KERNEL_CONCAT2(a, b)
#define ARCH_BENCH_KERNEL_HELPERS_BEGIN inline namespace ARCH_BENCH_KERNEL_CONCAT(variant_, ARCH_BENCH_KERNEL_VARIANT) {
#define ARCH_BENCH_KERNEL_HELPERS_END }
