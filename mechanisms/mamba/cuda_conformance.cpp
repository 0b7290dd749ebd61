// mamba's CUDA kernels on conformance inputs (`arch-bench conformance --device cuda`), declared in
// mechanisms/mamba/conformance.hpp and returned by its adapter's cuda_kernels(). Built with CUDA only.
#include "mechanisms/mamba/conformance.hpp"

#include "mechanisms/common/cuda_conformance.hpp"
#include "mechanisms/common/ssm_device_buffers.hpp"
#include "mechanisms/common/ssm_parameters.hpp"
#include "mechanisms/mamba/cuda.hpp"
#include "mechanisms/mamba/options.hpp"

namespace arch_bench {

namespace {

template <class T>
void mamba_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, CudaBackend& cuda) {
  const std::int64_t batch = inputs.axis("batch"), channels = inputs.axis("d_inner");
  const std::int64_t length = inputs.axis("length"), n = inputs.axis("N");
  Cell cell;
  cell.mechanism = "mamba";
  cell.phase = Phase::prefill;
  cell.sequence_length = length;
  cell.batch = batch;
  cell.heads = 1;
  cell.head_dim = channels;
  cell.dtype = dtype;
  cell.options = out.options;
  cell.options.set(mamba_state_size_option().key, n);
  require_cuda_cell(cell);
  const MambaShape shape{batch, channels, n};
  const std::int64_t rows = shape.rows();
  const std::vector<float> u = to_storage_values(inputs.at("u"), dtype);
  const std::vector<float> dt = to_storage_values(inputs.at("dt"), dtype);
  const std::vector<float> z = to_storage_values(inputs.at("z"), dtype);
  const std::vector<float> B = swap_last_two(to_storage_values(inputs.at("B"), dtype), batch, n, length);
  const std::vector<float> C = swap_last_two(to_storage_values(inputs.at("C"), dtype), batch, n, length);
  // A = -exp(A_log) as the adapter and MambaInputs::A().
  const SsmDeviceParameters<MambaParameters> params(cuda, negated_exp(to_fp32_values(inputs.at("A_log"))),
                                                    to_fp32_values(inputs.at("dt_bias")),
                                                    to_fp32_values(inputs.at("D")));
  const SsmDeviceTokens<T, MambaTokens<T>> tokens(cuda, cuda.allocator(), u, dt, z, B, C);
  Buffer<T> prefill = device_output<T>(cuda, u.size());
  Buffer<float> state = device_zeros(cuda, static_cast<std::size_t>(rows * n));
  const MambaScanKernel kernel = mamba_scan_kernel_of(cell).value_or(MambaScanKernel::lane);
  const MambaPrefillPlan plan = plan_mamba_prefill(shape, length, cuda.device().multiprocessors, kernel);
  Buffer<float> workspace(cuda.allocator(), static_cast<std::size_t>(mamba_prefill_workspace_bytes(plan) / sizeof(float)));
  launch_mamba_prefill<T>(plan, params.view(), tokens.view(), state.data(), workspace.data(), prefill.data(),
                          cuda.stream());
  replace_values(out.prefill_out, fetch(cuda, prefill));

  // Decode layouts: token t of every row ([rows]) and of every batch element ([batch, N]).
  const SsmDeviceTokens<T, MambaTokens<T>> steps(
      cuda, cuda.allocator(), token_major(u, rows, length, 1), token_major(dt, rows, length, 1),
      token_major(z, rows, length, 1), token_major(B, batch, length, n), token_major(C, batch, length, n));
  Buffer<T> decode = device_output<T>(cuda, u.size());
  Buffer<float> decode_state = device_zeros(cuda, static_cast<std::size_t>(rows * n));
  const MambaDecodePlan step = plan_mamba_decode(shape);
  for (std::int64_t t = 0; t < length; ++t) {
    launch_mamba_decode<T>(step, params.view(), steps.token(t, rows, rows, batch * n), decode_state.data(),
                           decode.data() + t * rows, cuda.stream());
  }
  replace_values(out.decode_out, row_major(fetch(cuda, decode), rows, length, 1));
  replace_state(out, "final_state", fetch(cuda, state), fetch(cuda, decode_state));
  out.details["prefill_chunk"] = kMambaScanChunk;
  out.details["prefill_segments"] = plan.segments;
  out.details["prefill_kernel"] = mamba_gpu_kernel_name(cell);
}

}  // namespace

void mamba_conformance_on_cuda(const ConformanceInputs& inputs, DType dtype, ConformanceOutputs& out, Backend& backend) {
  run_for_storage(dtype, backend, [&]<class T>(CudaBackend& cuda) { mamba_on_cuda<T>(inputs, dtype, out, cuda); });
}

}  // namespace arch_bench
