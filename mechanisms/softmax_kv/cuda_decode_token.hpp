#pragma once
// The new token of a softmax_kv / sliding_window CUDA decode cell, for the hand kernels' cells
// (cuda_cells.cpp) and cuDNN's (cudnn_sdpa_cells.cpp): the step reads token L's query rows and
// appends its K/V rows, one per K/V head (grouped_kv.hpp). Built with CUDA only.
#include <cstdint>

#include "core/backends/cuda/cuda_backend.hpp"
#include "core/backends/cuda/device_transfer.hpp"
#include "mechanisms/common/grouped_kv.hpp"
#include "mechanisms/common/inputs.hpp"

namespace arch_bench {

// Uploads token `length`'s q rows into q, and its k and v rows into k_new and v_new, in storage T.
template <class T>
void upload_decode_token(CudaBackend& backend, const AttentionInputs& inputs, std::int64_t group, std::int64_t length,
                         Buffer<T>& q, Buffer<T>& k_new, Buffer<T>& v_new) {
  const std::int64_t kv_count = static_cast<std::int64_t>(k_new.size());
  upload<T>(backend, inputs.head_rows(inputs.q, length, 1).data(), static_cast<std::int64_t>(q.size()), q.data());
  upload<T>(backend, kv_head_rows(inputs, inputs.k, group, length, 1).data(), kv_count, k_new.data());
  upload<T>(backend, kv_head_rows(inputs, inputs.v, group, length, 1).data(), kv_count, v_new.data());
}

}  // namespace arch_bench
