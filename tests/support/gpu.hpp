#pragma once
// GPU tests (tests/gpu/, ctest label `gpu`) run on a usable CUDA device and report *skipped*, never
// passed, without one (no GPU, no driver, or a build without nvcc).
#include <memory>

#include <gtest/gtest.h>

#include "core/backends/backend.hpp"
#include "core/backends/cuda/device_probe.hpp"


// Skips the current test when there is no usable CUDA device; binds `name` to the backend.
#define ARCH_BENCH_CUDA_BACKEND_OR_SKIP(name)                                          \
  const ::arch_bench::CudaProbe name##_probe = ::arch_bench::probe_cuda();            \
  if (!name##_probe.usable) GTEST_SKIP() << "no usable CUDA device: " << name##_probe.reason; \
  std::unique_ptr<::arch_bench::Backend> name = ::arch_bench::make_cuda_backend(0)
