// mamba on inputs from .npy files (`arch-bench conformance`): the chunked-scan prefill, the decode
// step token by token from h = 0, and the fp64 sequential reference. The files follow the argument
// layout of mamba_ssm's selective_scan_fn (u, delta, z [batch, d_inner, length]; B, C
// [batch, N, length]), with A given as A_log (A = -exp(A_log)) and delta before its bias and softplus.
#include <omp.h>

#include <cmath>

#include <fmt/format.h>

#include "mechanisms/mamba/cpu.hpp"
#include "mechanisms/mamba/inputs.hpp"
#include "mechanisms/mamba/reference.hpp"
#include "mechanisms/mamba/conformance.hpp"
#include "core/errors.hpp"
#include "mechanisms/mamba/options.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kChannelAxes = {"batch", "d_inner", "length"};
const std::vector<std::string> kTokenAxes = {"batch", "N", "length"};

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype) {
  const std::int64_t batch = inputs.axis("batch"), channels = inputs.axis("d_inner");
  const std::int64_t length = inputs.axis("length"), n = inputs.axis("N");
  const MambaShape shape{batch, channels, n};
  const std::int64_t rows = shape.rows();
  const std::vector<std::int64_t> out_shape = {batch, channels, length};
  // Per channel-token inputs are already in the kernels' [rows, tokens] order; B and C are not.
  const std::vector<float> u = to_storage_values(inputs.at("u"), dtype);
  const std::vector<float> dt_raw = to_storage_values(inputs.at("dt"), dtype);
  const std::vector<float> z = to_storage_values(inputs.at("z"), dtype);
  const std::vector<float> B = swap_last_two(to_storage_values(inputs.at("B"), dtype), batch, n, length);
  const std::vector<float> C = swap_last_two(to_storage_values(inputs.at("C"), dtype), batch, n, length);
  const std::vector<T> us = to_storage<T>(u), dts = to_storage<T>(dt_raw), zs = to_storage<T>(z);
  const std::vector<T> Bs = to_storage<T>(B), Cs = to_storage<T>(C);
  const std::vector<float> A_log = to_fp32_values(inputs.at("A_log"));
  const std::vector<float> dt_bias = to_fp32_values(inputs.at("dt_bias"));
  const std::vector<float> D = to_fp32_values(inputs.at("D"));
  std::vector<float> A(A_log.size());
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = -std::exp(A_log[i]);  // as MambaInputs::A()
  const MambaParameters params{A.data(), dt_bias.data(), D.data()};

  ConformanceOutputs out;
  const std::int64_t chunk = mamba_prefill_chunk(shape, length, omp_get_max_threads());
  std::vector<float> workspace(mamba_prefill_workspace_floats(shape, length, chunk));
  std::vector<float> state(rows * n, 0.0f);
  std::vector<T> prefill(us.size());
  mamba_prefill_chunked(shape, params, length, chunk,
                        MambaTokens<T>{us.data(), dts.data(), zs.data(), Bs.data(), Cs.data()}, state.data(),
                        workspace.data(), prefill.data());
  out.prefill_out = storage_array(out_shape, prefill);

  std::vector<float> decode_state(state.size(), 0.0f);
  std::vector<T> decode(us.size()), u_t(rows), dt_t(rows), z_t(rows), B_t(batch * n), C_t(batch * n), o_t(rows);
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(us.data(), rows, length, 1, t, u_t.data());
    gather_token(dts.data(), rows, length, 1, t, dt_t.data());
    gather_token(zs.data(), rows, length, 1, t, z_t.data());
    gather_token(Bs.data(), batch, length, n, t, B_t.data());
    gather_token(Cs.data(), batch, length, n, t, C_t.data());
    mamba_decode_step(shape, params, MambaTokens<T>{u_t.data(), dt_t.data(), z_t.data(), B_t.data(), C_t.data()},
                      decode_state.data(), o_t.data());
    scatter_token(o_t.data(), rows, length, 1, t, decode.data());
  }
  out.decode_out = storage_array(out_shape, decode);

  MambaParametersD reference_params{MatrixD(channels, n), std::vector<double>(dt_bias.begin(), dt_bias.end()),
                                    std::vector<double>(D.begin(), D.end())};
  std::copy(A_log.begin(), A_log.end(), reference_params.A_log.data.begin());
  std::vector<double> reference(u.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t b = 0; b < batch; ++b) {
    MambaSequenceD x{MatrixD(length, channels), MatrixD(length, channels), MatrixD(length, channels),
                     slice_matrix(B, b, length, n), slice_matrix(C, b, length, n)};
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t t = 0; t < length; ++t) {
        const std::int64_t i = (b * channels + c) * length + t;
        x.u(t, c) = u[i];
        x.dt_raw(t, c) = dt_raw[i];
        x.z(t, c) = z[i];
      }
    }
    const MambaReferenceResult r = mamba_selective_scan(x, reference_params);
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t t = 0; t < length; ++t) reference[(b * channels + c) * length + t] = r.outputs(t, c);
    }
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + b * channels * n);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  const std::vector<std::int64_t> state_shape = {batch, channels, n};
  out.states.push_back(kernel_state("final_state", state_shape, state, decode_state, reference_state));
  out.options.set(mamba_state_size_option().key, n);
  out.options_json = {{"state_size", n}};
  out.details = {{"prefill_chunk", chunk}};
  return out;
}

class MambaConformance final : public MechanismConformance {
 public:
  MambaConformance() : MechanismConformance({"mamba", 0, ARCH_BENCH_CUDA_ONLY(mamba_conformance_on_cuda)}) {}

 private:
  ConformanceSpec describe(const MechanismOptions&) const override {
    ConformanceSpec spec;
    spec.inputs = {{"u", kChannelAxes, "input x of the scan, per channel"},
                   {"dt", kChannelAxes, "dt before its bias and softplus (selective_scan_fn's delta)"},
                   {"z", kChannelAxes, "gate: out = y * silu(z)"},
                   {"B", kTokenAxes, "input-dependent B_t, shared by the channels"},
                   {"C", kTokenAxes, "input-dependent C_t, shared by the channels"},
                   {"A_log", {"d_inner", "N"}, "A = -exp(A_log) < 0", true},
                   {"dt_bias", {"d_inner"}, "dt = softplus(dt + dt_bias)", true},
                   {"D", {"d_inner"}, "skip: y_t = C_t.h_t + D u_t", true}};
    spec.outputs = standard_outputs(kChannelAxes, "out_t = (C_t.h_t + D u_t) * silu(z_t)");
    add_state_outputs(spec.outputs, "final_state", {"batch", "d_inner", "N"},
                      "h after the last token, fp32 (from the prefill)", "h from the fp64 reference");
    spec.options = "none at run time (N is read from A_log.npy); `--state-size` sizes N for --generate, where "
                   "d_inner = heads x dim.";
    spec.notes = "Per channel: dt_t = softplus(dt_t + dt_bias), h_t = exp(dt_t A) h_{t-1} + dt_t B_t u_t from h = 0, "
                 "y_t = C_t.h_t + D u_t, out_t = y_t silu(z_t). This is the argument layout of mamba_ssm's "
                 "selective_scan_fn(u, dt, -exp(A_log), B, C, D, z, dt_bias, delta_softplus=True, "
                 "return_last_state=True), whose outputs are (out, last_state). N is at most 256.";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype, const MechanismOptions&) const override {
    require_axis_at_most(inputs, "N", kMambaMaxStateSize, "mamba");
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype) : run_typed<float>(inputs, dtype);
  }

  // The inputs and parameters `arch-bench run --seed` draws for a prefill cell of this shape
  // (mechanisms/mamba/inputs.hpp), with d_inner = heads x dim.
  std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                       std::uint64_t seed, DType dtype) const override {
    const std::int64_t n = mamba_state_size_option().integer(options);
    if (n < 1 || n > kMambaMaxStateSize) {
      throw UsageError(fmt::format("--state-size {}: mamba takes N from 1 to {}", n, kMambaMaxStateSize));
    }
    Cell cell = generated_cell(shape, options, dtype);
    cell.options.set(mamba_state_size_option().key, n);
    const MambaInputs drawn = make_mamba_inputs(cell, shape.length, seed);
    const std::int64_t d_inner = drawn.channels;
    const std::vector<std::int64_t> channel_shape = {shape.batch, d_inner, shape.length};
    const std::vector<std::int64_t> token_shape = {shape.batch, n, shape.length};
    return {{"u", make_array(channel_shape, drawn.u, NpyDtype::float32)},
            {"dt", make_array(channel_shape, drawn.dt_raw, NpyDtype::float32)},
            {"z", make_array(channel_shape, drawn.z, NpyDtype::float32)},
            {"B", make_array(token_shape, swap_last_two(drawn.B, shape.batch, shape.length, n), NpyDtype::float32)},
            {"C", make_array(token_shape, swap_last_two(drawn.C, shape.batch, shape.length, n), NpyDtype::float32)},
            {"A_log", make_array({d_inner, n}, drawn.A_log, NpyDtype::float32)},
            {"dt_bias", make_array({d_inner}, drawn.dt_bias, NpyDtype::float32)},
            {"D", make_array({d_inner}, drawn.D, NpyDtype::float32)}};
  }
};

}  // namespace

const ConformanceAdapter& mamba_conformance() { return adapter_instance<MambaConformance>(); }

}  // namespace arch_bench
