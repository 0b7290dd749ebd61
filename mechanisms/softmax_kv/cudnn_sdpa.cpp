// The cudnn-frontend graph of softmax_kv's cuDNN implementation. Compiled with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING (every cuDNN call goes through cudnn_frontend::cudnn_dlhandle,
// which is this process's cudnn_library().handle) and CUDNN_FRONTEND_SKIP_JSON_LIB (the frontend's
// own copy of nlohmann::json would clash with the one the rest of arch-bench links).
#include "mechanisms/softmax_kv/cudnn_sdpa.hpp"

#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "mechanisms/common/cudnn_library.hpp"

// The frontend's dynamic-loading mode declares this handle and leaves defining it to the program.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace arch_bench {

namespace fe = cudnn_frontend;

namespace {

enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kSeqLenQ, kSeqLenKv };

// Points the frontend at the library and at this build's CUDA runtime, once. The frontend opens
// libcudart itself and, finding two majors on the path (a PyTorch environment beside the toolkit),
// would take the first: the one arch-bench was built with is the one already in the process.
void bind_frontend(const CudnnLibrary& library) {
  static std::once_flag once;
  std::call_once(once, [&] {
    fe::cudnn_dlhandle = library.handle;
    const std::string cudart = fmt::format("libcudart.so.{}", CUDART_VERSION / 1000);
    ::setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", cudart.c_str(), /*overwrite=*/0);
  });
}

std::vector<std::int64_t> packed_strides(std::int64_t heads, std::int64_t tokens, std::int64_t dim) {
  return {heads * tokens * dim, tokens * dim, dim, 1};
}

}  // namespace

struct CudnnSdpa::Impl {
  cudnnHandle_t handle = nullptr;
  std::unique_ptr<fe::graph::Graph> graph = std::make_unique<fe::graph::Graph>();
  std::int64_t workspace = 0;
  bool padded = false;
  mutable std::unordered_map<std::int64_t, void*> pack{{kQ, nullptr},       {kK, nullptr},        {kV, nullptr},
                                                       {kO, nullptr},       {kSeqLenQ, nullptr},  {kSeqLenKv, nullptr}};

  // The graph's plans were built on the handle: they go first.
  ~Impl() {
    graph.reset();
    if (handle != nullptr) fe::detail::destroy_handle(handle);
  }
};

CudnnSdpa::CudnnSdpa(const CudnnSdpaShape& shape, CUstream_st* stream) : impl_(std::make_unique<Impl>()) {
  impl_->padded = shape.padded;
  if (!shape.padded) {  // the variant pack names exactly the graph's tensors
    impl_->pack.erase(kSeqLenQ);
    impl_->pack.erase(kSeqLenKv);
  }
  const CudnnLibrary& library = cudnn_library();
  if (!library.usable()) throw CudnnGraphUnsupported(library.reason);
  bind_frontend(library);
  try {
    if (const cudnnStatus_t status = fe::detail::create_handle(&impl_->handle); status != CUDNN_STATUS_SUCCESS) {
      impl_->handle = nullptr;
      throw CudnnGraphUnsupported(fmt::format("cudnnCreate failed: {}", fe::detail::get_error_string(status)));
    }
    if (const cudnnStatus_t status = fe::detail::set_stream(impl_->handle, stream); status != CUDNN_STATUS_SUCCESS) {
      throw CellFailure("cudnn_error", fmt::format("cudnnSetStream failed: {}", fe::detail::get_error_string(status)));
    }
    fe::graph::Graph& graph = *impl_->graph;
    graph.set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    const std::int64_t d = shape.head_dim;
    auto q = graph.tensor(fe::graph::Tensor_attributes()
                              .set_name("q")
                              .set_uid(kQ)
                              .set_dim({shape.batch, shape.heads, shape.q_tokens, d})
                              .set_stride(packed_strides(shape.heads, shape.q_tokens, d)));
    // Grouped-query attention: K/V carry kv_heads heads; cuDNN maps query head h to K/V head
    // h / (heads / kv_heads), the layout of kv_heads_option.hpp.
    auto k = graph.tensor(fe::graph::Tensor_attributes()
                              .set_name("k")
                              .set_uid(kK)
                              .set_dim({shape.batch, shape.kv_heads, shape.kv_tokens, d})
                              .set_stride(packed_strides(shape.kv_heads, shape.kv_tokens, d)));
    auto v = graph.tensor(fe::graph::Tensor_attributes()
                              .set_name("v")
                              .set_uid(kV)
                              .set_dim({shape.batch, shape.kv_heads, shape.kv_tokens, d})
                              .set_stride(packed_strides(shape.kv_heads, shape.kv_tokens, d)));
    auto options = fe::graph::SDPA_attributes()
                       .set_name("softmax_kv")
                       .set_generate_stats(false)  // inference: no softmax statistics for a backward pass
                       .set_attn_scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
    // A prefill's query i sees keys 0..i; a decode step's single query is the newest token and sees
    // the whole cache, so it takes no mask (a top-left causal mask would hide all but key 0).
    if (shape.causal) options.set_causal_mask(true);
    if (shape.padded) {
      auto lengths = [&](const char* name, std::int64_t uid) {
        return graph.tensor(fe::graph::Tensor_attributes()
                                .set_name(name)
                                .set_uid(uid)
                                .set_dim({shape.batch, 1, 1, 1})
                                .set_stride({1, 1, 1, 1})
                                .set_data_type(fe::DataType_t::INT32));
      };
      options.set_padding_mask(true)
          .set_seq_len_q(lengths("seq_len_q", kSeqLenQ))
          .set_seq_len_kv(lengths("seq_len_kv", kSeqLenKv));
    }
    auto [o, stats] = graph.sdpa(q, k, v, std::move(options));
    (void)stats;
    o->set_output(true)
        .set_uid(kO)
        .set_dim({shape.batch, shape.heads, shape.q_tokens, d})
        .set_stride(packed_strides(shape.heads, shape.q_tokens, d));
    if (fe::error_t status = graph.build(impl_->handle, {fe::HeurMode_t::A}); status.is_bad()) {
      throw CudnnGraphUnsupported(fmt::format("B{} H{} kv_heads {} q {} kv {} d {}: {}", shape.batch, shape.heads,
                                              shape.kv_heads, shape.q_tokens, shape.kv_tokens, d,
                                              status.get_message()));
    }
    if (fe::error_t status = graph.get_workspace_size(impl_->workspace); status.is_bad()) {
      throw CellFailure("cudnn_error", fmt::format("cuDNN workspace size: {}", status.get_message()));
    }
  } catch (const CellFailure&) {
    throw;
  } catch (const std::exception& error) {
    // The frontend throws from some setters and from symbol lookup (a library without an entry point).
    throw CudnnGraphUnsupported(fmt::format("cudnn-frontend: {}", error.what()));
  }
}

CudnnSdpa::~CudnnSdpa() = default;

std::int64_t CudnnSdpa::workspace_bytes() const { return impl_->workspace; }

void CudnnSdpa::enqueue(const void* q, const void* k, const void* v, void* out, void* workspace,
                        const std::int32_t* seq_len_q, const std::int32_t* seq_len_kv) const {
  // Existing keys: assigning allocates nothing.
  impl_->pack[kQ] = const_cast<void*>(q);
  impl_->pack[kK] = const_cast<void*>(k);
  impl_->pack[kV] = const_cast<void*>(v);
  impl_->pack[kO] = out;
  if (impl_->padded) {
    if (seq_len_q == nullptr || seq_len_kv == nullptr) {
      throw std::invalid_argument("CudnnSdpa::enqueue: a padded graph needs seq_len_q and seq_len_kv");
    }
    impl_->pack[kSeqLenQ] = const_cast<std::int32_t*>(seq_len_q);
    impl_->pack[kSeqLenKv] = const_cast<std::int32_t*>(seq_len_kv);
  }
  if (fe::error_t status = impl_->graph->execute(impl_->handle, impl_->pack, workspace); status.is_bad()) {
    throw CellFailure("cudnn_error", fmt::format("cuDNN fused attention: {}", status.get_message()));
  }
}

std::string cudnn_sdpa_kernel_name() {
  return fmt::format("cudnn_sdpa (cuDNN {})", cudnn_version_text(cudnn_library().version));
}

}  // namespace arch_bench
