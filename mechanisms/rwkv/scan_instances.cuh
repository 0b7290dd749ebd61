#pragma once
// The instances every RWKV generation's scan launcher (launch_rwkv4_scan, launch_rwkv6_scan,
// launch_rwkv7_scan; declared in cuda.hpp with one signature) compiles in its cuda.cu: fp32 and bf16
// storage. Written once so that the signature the three instantiate is cuda.hpp's in one place.
#include "mechanisms/rwkv/cuda.hpp"

#define ARCH_BENCH_RWKV_SCAN_INSTANCES(launch)                                                                  \
  template void launch<float>(const RwkvScanPlan&, const RwkvParameters&, const RwkvTokens<float>&, float*,    \
                              float*, CUstream_st*);                                                           \
  template void launch<bf16>(const RwkvScanPlan&, const RwkvParameters&, const RwkvTokens<bf16>&, float*, bf16*, \
                             CUstream_st*);
