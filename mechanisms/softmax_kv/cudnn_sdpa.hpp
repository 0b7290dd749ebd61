#pragma once
// cuDNN's fused attention (scaled dot-product attention, SDPA) through the cudnn-frontend graph API:
// the library a user deploys, as a softmax_kv implementation (softmax_impl.hpp). Built only with
// ARCH_BENCH_HAVE_CUDNN (cmake/Cudnn.cmake); libcudnn is opened at run time (cudnn_library.hpp) and
// the frontend resolves every cuDNN call through that handle (its dynamic-loading mode). No cuDNN or
// CUDA headers here.
#include <cstdint>
#include <memory>
#include <string>

#include "core/cell.hpp"
#include "core/errors.hpp"

struct CUstream_st;

namespace arch_bench {

class Backend;
class CudaBackend;
class PreparedCell;
struct AttentionValues;
struct ConformanceOutputs;

// cuDNN refused the graph (a shape or device outside its support surface), or its library is not
// usable: with --softmax-impl auto the hand kernels run instead.
class CudnnGraphUnsupported : public CellFailure {
 public:
  explicit CudnnGraphUnsupported(const std::string& message) : CellFailure("unsupported", message) {}
};

// One attention problem: q [batch, heads, q_tokens, dim], k and v [batch, kv_heads, kv_tokens, dim],
// out as q; bfloat16 storage, fp32 softmax and accumulation, scale 1/sqrt(dim). causal: query i sees
// keys 0..i (prefill, q_tokens == kv_tokens); otherwise every key (a decode step's one query).
struct CudnnSdpaShape {
  std::int64_t batch = 1, heads = 1, kv_heads = 1, q_tokens = 1, kv_tokens = 1, head_dim = 64;
  bool causal = true;
  // A cache filled only in part (cuDNN's padding mask): K/V hold kv_tokens rows per head, and batch
  // element b attends its seq_len_q[b] queries over its first seq_len_kv[b] rows, two device int32
  // arrays of `batch` entries handed to enqueue(). One graph then serves every step of a decode loop.
  bool padded = false;
};

// The graph, its execution plan and a cuDNN handle bound to `stream`, built once (at prepare time);
// enqueue() only launches: no allocation, no synchronisation.
class CudnnSdpa {
 public:
  // Throws CudnnGraphUnsupported when cuDNN cannot run the shape, CellFailure on other errors.
  CudnnSdpa(const CudnnSdpaShape& shape, CUstream_st* stream);
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  // Device workspace the plan needs (the caller allocates it, at prepare time).
  std::int64_t workspace_bytes() const;
  // Device pointers; throws CellFailure("cudnn_error") when cuDNN reports an error. seq_len_q and
  // seq_len_kv: device int32 [batch], required when the shape is `padded`, ignored otherwise.
  void enqueue(const void* q, const void* k, const void* v, void* out, void* workspace,
               const std::int32_t* seq_len_q = nullptr, const std::int32_t* seq_len_kv = nullptr) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a row's gpu_kernel records for this implementation: "cudnn_sdpa (cuDNN 9.19.0)".
std::string cudnn_sdpa_kernel_name();

// The cuDNN prepared cell for `cell` (bfloat16; decode or prefill) on the CUDA backend: the same
// seeded inputs, cache layout and fp64 checks as the hand kernels' cells (cuda_cells.cpp).
std::unique_ptr<PreparedCell> prepare_softmax_kv_cudnn(const Cell& cell, std::uint64_t seed, Backend& backend);

// `conformance --device cuda` through cuDNN (mechanisms/softmax_kv/cudnn_sdpa_conformance.cpp): the
// causal prefill, then decode token by token from an empty cache with one padded graph (token t
// appended at row t, attending over rows 0..t); writes prefill_out, decode_out, the k_cache and
// v_cache states and details["softmax_impl"]. bfloat16 values (x rounded to it). Throws
// CudnnGraphUnsupported when cuDNN cannot run the shapes.
void softmax_kv_conformance_on_cudnn(const AttentionValues& x, std::int64_t batch, std::int64_t kv_heads,
                                     ConformanceOutputs& out, CudaBackend& cuda);

}  // namespace arch_bench
