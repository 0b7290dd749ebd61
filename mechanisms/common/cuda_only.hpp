#pragma once
// ARCH_BENCH_CUDA_ONLY(f): f, a function compiled only in a build with CUDA (a mechanism's CUDA cells'
// prepare, its GPU conformance run), where the build has CUDA, and nullptr where it has not: naming f
// there would not link. What takes it treats nullptr as "no CUDA kernels here".
#if ARCH_BENCH_HAVE_CUDA
#define ARCH_BENCH_CUDA_ONLY(function) (function)
#else
#define ARCH_BENCH_CUDA_ONLY(function) nullptr
#endif
