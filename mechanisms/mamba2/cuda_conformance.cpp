// mamba2's CUDA kernel on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/mamba2/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA
// only; compiled, not yet run on a GPU.
#include "mechanisms/mamba2/conformance.hpp"

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/common/ssm_device_buffers.hpp"
#include "mechanisms/common/ssm_parameters.hpp"
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
  // A = -exp(A_log) as the adapter and Mamba2Inputs::A().
  const SsmDeviceParameters<Mamba2Parameters> params(cuda, negated_exp(to_fp32_values(inputs.at("ssd_A_log"))),
                                                     to_fp32_values(inputs.at("ssd_dt_bias")),
                                                     to_fp32_values(inputs.at("ssd_D")));
  const auto to_files = [&](const std::vector<float>& head_major) {
    return mamba2_swap_middle(head_major, batch, heads, length, p);
  };

  const SsmDeviceTokens<T, Mamba2Tokens<T>> tokens(cuda, cuda.allocator(), x, dt, z, B, C);
  Buffer<T> prefill = device_output<T>(cuda, x.size());
  Buffer<float> state = device_zeros(cuda, static_cast<std::size_t>(rows * n * p));
  launch_mamba2_scan<T>(plan_mamba2_cuda(shape, length), params.view(), tokens.view(), state.data(), prefill.data(),
                        cuda.stream());
  replace_values(out.prefill_out, to_files(fetch(cuda, prefill)));

  // Decode layouts: token t of every row ([rows, P], [rows]) and of every group ([batch * groups, N]).
  const SsmDeviceTokens<T, Mamba2Tokens<T>> steps(
      cuda, cuda.allocator(), token_major(x, rows, length, p), token_major(dt, rows, length, 1),
      token_major(z, rows, length, p), token_major(B, group_rows, length, n), token_major(C, group_rows, length, n));
  Buffer<T> decode = device_output<T>(cuda, x.size());
  Buffer<float> decode_state = device_zeros(cuda, static_cast<std::size_t>(rows * n * p));
  const Mamba2CudaPlan step = plan_mamba2_cuda(shape, 1);
  for (std::int64_t t = 0; t < length; ++t) {
    launch_mamba2_scan<T>(step, params.view(), steps.token(t, rows * p, rows, group_rows * n), decode_state.data(),
                          decode.data() + t * rows * p, cuda.stream());
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
