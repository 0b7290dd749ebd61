#pragma once
// The machine ceilings a run measures (memory bandwidth, FLOP rate) and expresses every row's
// achieved rates against: the CPU backend measures them in runner/measure/ceilings.cpp, the CUDA
// backend in core/backends/cuda/gpu_ceilings.cpp.
#include <optional>
#include <string>
#include <vector>

namespace arch_bench {

// One reading of a CPU run's ceilings: `when` is "before_cells" or "after_cells".
struct CeilingReading {
  std::string when;
  double memory_read_gbps = 0, memory_triad_gbps = 0, peak_gflops = 0;
};

// Machine ceilings measured in the same run, against which every row's rates are expressed.
struct Ceilings {
  double memory_read_gbps = 0;   // streaming read of a buffer 4x the last-level cache
  double memory_triad_gbps = 0;  // STREAM triad a[i] = b[i] + s*c[i] (3 streams counted)
  double peak_gflops = 0;        // fp32 FMA throughput, all threads
  int threads = 1;
  std::string method;
  // GPU ceilings (the CUDA backend): memory_read_gbps is then the device copy bandwidth and
  // peak_gflops the cuBLAS bf16 rate; memory_triad_gbps is 0 (not measured) and written as null.
  std::optional<double> device_copy_gbps;
  std::optional<double> gemm_bf16_gflops;
  // CPU runs whose cells ran long take a second reading after them (ceilings.hpp); the fields
  // above are then the best of the two and both readings are listed here. Empty: one reading.
  std::vector<CeilingReading> readings;
};

}  // namespace arch_bench
