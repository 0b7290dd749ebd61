// mamba2's CUDA kernel on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/mamba2/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA
// only; compiled, not yet run on a GPU.
#include "mechanisms/mamba2/conformance.hpp"

#include <cmath>

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/mamba2/cuda.hpp"
#include "mechanisms/mamba2/options.hpp"

namespace arch_bench {

namespace {

template <class T>
void mamba2_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const std::int64_t batch = inputs.axis("batch"), length = inputs.axis("length"), heads = inputs.axis("heads");
  const std::int64_t p = inputs.axis("dim"), groups = inputs.axis("n_groups"), n = inputs.axis("N");
  Cell cell;
  cell.mechanism = "mamba2";
  cell.phase = Phase::prefill;
  cell.sequence_length = length;
  cell.batch = batch;
  cell.heads = heads;
  cell.head_dim = p;
  cell.dtype = dtype;
  cell.options = out.options;
  cell.options.set(mamba2_state_size_option().key, n);
  cell.options.set(mamba2_groups_option().key, groups);
  require_cuda_cell(cell);
  const Mamba2Shape shape{batch, heads, groups, p, n};
  const std::int64_t rows = shape.rows(), group_rows = batch * groups;
  // The CPU adapter's layout conversions: token-major files -> head-major kernels.
  const auto kernel_layout = [&](const char* name, std::int64_t across, std::int64_t width) {
    return mamba2_swap_middle(to_storage_values(inputs.at(name), dtype), batch, length, across, width);
  };
  const std::vector<float> x = kernel_layout("ssd_x", heads, p), z = kernel_layout("ssd_z", heads, p);
  const std::vector<float> dt = kernel_layout("ssd_dt", heads, 1);
  const std::vector<float> B = kernel_layout("ssd_B", groups, n), C = kernel_layout("ssd_C", groups, n);
  std::vector<float> A = to_fp32_values(inputs.at("ssd_A_log"));
  for (float& a : A) a = -std::exp(a);  // as the adapter and Mamba2Inputs::A()
  const Buffer<float> A_d = device_copy<float>(cuda, A);
  const Buffer<float> bias = device_copy<float>(cuda, to_fp32_values(inputs.at("ssd_dt_bias")));
  const Buffer<float> D = device_copy<float>(cuda, to_fp32_values(inputs.at("ssd_D")));
  const Mamba2Parameters params{A_d.data(), bias.data(), D.data()};
  const auto to_files = [&](const std::vector<float>& head_major) {
    return mamba2_swap_middle(head_major, batch, heads, length, p);
  };

  const Buffer<T> x_d = device_copy<T>(cuda, x), dt_d = device_copy<T>(cuda, dt), z_d = device_copy<T>(cuda, z);
  const Buffer<T> B_d = device_copy<T>(cuda, B), C_d = device_copy<T>(cuda, C);
  Buffer<T> prefill = device_output<T>(cuda, x.size());
  Buffer<float> state = device_zeros(cuda, static_cast<std::size_t>(rows * n * p));
  launch_mamba2_scan<T>(plan_mamba2_cuda(shape, length), params,
                        Mamba2Tokens<T>{x_d.data(), dt_d.data(), z_d.data(), B_d.data(), C_d.data()}, state.data(),
                        prefill.data(), cuda.stream());
  replace_values(out.prefill_out, to_files(fetch(cuda, prefill)));

  // Decode layouts: token t of every row ([rows, P], [rows]) and of every group ([batch * groups, N]).
  const Buffer<T> x_t = device_copy<T>(cuda, token_major(x, rows, length, p));
  const Buffer<T> z_t = device_copy<T>(cuda, token_major(z, rows, length, p));
  const Buffer<T> dt_t = device_copy<T>(cuda, token_major(dt, rows, length, 1));
  const Buffer<T> B_t = device_copy<T>(cuda, token_major(B, group_rows, length, n));
  const Buffer<T> C_t = device_copy<T>(cuda, token_major(C, group_rows, length, n));
  Buffer<T> decode = device_output<T>(cuda, x.size());
  Buffer<float> decode_state = device_zeros(cuda, static_cast<std::size_t>(rows * n * p));
  const Mamba2CudaPlan step = plan_mamba2_cuda(shape, 1);
  for (std::int64_t t = 0; t < length; ++t) {
    const Mamba2Tokens<T> token{x_t.data() + t * rows * p, dt_t.data() + t * rows, z_t.data() + t * rows * p,
                                B_t.data() + t * group_rows * n, C_t.data() + t * group_rows * n};
    launch_mamba2_scan<T>(step, params, token, decode_state.data(), decode.data() + t * rows * p, cuda.stream());
  }
  replace_values(out.decode_out, to_files(row_major(fetch(cuda, decode), rows, length, p)));
  replace_state(out, "final_state", mamba2_states_to_files(fetch(cuda, state), rows, n, p),
                mamba2_states_to_files(fetch(cuda, decode_state), rows, n, p));
  out.details["prefill_chunk"] = 1;  // the recurrence: no chunks on the GPU yet
}

}  // namespace

void mamba2_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out,
                                Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { mamba2_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
