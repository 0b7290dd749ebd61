// mamba2 on inputs from .npy files (`arch-bench conformance`): the chunked SSD prefill, the decode
// step token by token from H = 0, and the fp64 recurrent reference. The files follow the argument
// layout of mamba_ssm's mamba_chunk_scan_combined (x, z [batch, length, heads, dim]; dt [batch,
// length, heads] before its bias and softplus; B, C [batch, length, n_groups, N]; A given as A_log
// per head), with names prefixed ssd_ so that one --generate folder holds mamba's u, dt, B, C and
// these side by side.
#include <omp.h>

#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "mechanisms/mamba2/conformance.hpp"
#include "mechanisms/mamba2/cpu.hpp"
#include "mechanisms/mamba2/inputs.hpp"
#include "mechanisms/mamba2/options.hpp"
#include "mechanisms/mamba2/reference.hpp"

namespace arch_bench {

namespace {

const std::vector<std::string> kChannelAxes = {"batch", "length", "heads", "dim"};
const std::vector<std::string> kGroupAxes = {"batch", "length", "n_groups", "N"};

template <class T>
std::vector<float> widened(const std::vector<T>& x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = to_float(x[i]);
  return out;
}

template <class T>
ConformanceOutputs run_typed(const ConformanceInputs& inputs, DType dtype, std::int64_t chunk) {
  const std::int64_t batch = inputs.axis("batch"), length = inputs.axis("length"), heads = inputs.axis("heads");
  const std::int64_t p = inputs.axis("dim"), groups = inputs.axis("n_groups"), n = inputs.axis("N");
  const Mamba2Shape shape{batch, heads, groups, p, n};
  const std::int64_t rows = shape.rows(), group_rows = batch * groups;
  // Inputs rounded to the storage dtype, in the kernels' head-major layout.
  const std::vector<float> x = mamba2_swap_middle(to_storage_values(inputs.at("ssd_x"), dtype), batch, length, heads, p);
  const std::vector<float> z = mamba2_swap_middle(to_storage_values(inputs.at("ssd_z"), dtype), batch, length, heads, p);
  const std::vector<float> dt = mamba2_swap_middle(to_storage_values(inputs.at("ssd_dt"), dtype), batch, length, heads, 1);
  const std::vector<float> B = mamba2_swap_middle(to_storage_values(inputs.at("ssd_B"), dtype), batch, length, groups, n);
  const std::vector<float> C = mamba2_swap_middle(to_storage_values(inputs.at("ssd_C"), dtype), batch, length, groups, n);
  const std::vector<T> xs = to_storage<T>(x), zs = to_storage<T>(z), dts = to_storage<T>(dt);
  const std::vector<T> Bs = to_storage<T>(B), Cs = to_storage<T>(C);
  const std::vector<float> A_log = to_fp32_values(inputs.at("ssd_A_log"));
  const std::vector<float> dt_bias = to_fp32_values(inputs.at("ssd_dt_bias"));
  const std::vector<float> D = to_fp32_values(inputs.at("ssd_D"));
  std::vector<float> A(A_log.size());
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = -std::exp(A_log[i]);  // as Mamba2Inputs::A()
  const Mamba2Parameters params{A.data(), dt_bias.data(), D.data()};

  ConformanceOutputs out;
  const auto to_files = [&](const std::vector<float>& kernel_layout) {
    return mamba2_swap_middle(kernel_layout, batch, heads, length, p);
  };
  const std::vector<std::int64_t> out_shape = {batch, length, heads, p};
  const int threads = omp_get_max_threads();
  std::vector<float> workspace(threads * mamba2_chunk_workspace_floats(shape, chunk));
  std::vector<float> state(rows * n * p, 0.0f);
  std::vector<T> prefill(xs.size());
  mamba2_prefill_chunked(shape, params, length, chunk,
                         Mamba2Tokens<T>{xs.data(), dts.data(), zs.data(), Bs.data(), Cs.data()}, state.data(),
                         workspace.data(), threads, prefill.data());
  out.prefill_out = make_array(out_shape, to_files(widened(prefill)), NpyDtype::float32);

  std::vector<float> decode_state(state.size(), 0.0f);
  std::vector<T> decode(xs.size()), x_t(rows * p), z_t(rows * p), dt_t(rows), B_t(group_rows * n),
      C_t(group_rows * n), o_t(rows * p);
  for (std::int64_t t = 0; t < length; ++t) {
    gather_token(xs.data(), rows, length, p, t, x_t.data());
    gather_token(zs.data(), rows, length, p, t, z_t.data());
    gather_token(dts.data(), rows, length, 1, t, dt_t.data());
    gather_token(Bs.data(), group_rows, length, n, t, B_t.data());
    gather_token(Cs.data(), group_rows, length, n, t, C_t.data());
    mamba2_decode_step(shape, params, Mamba2Tokens<T>{x_t.data(), dt_t.data(), z_t.data(), B_t.data(), C_t.data()},
                       decode_state.data(), o_t.data());
    scatter_token(o_t.data(), rows, length, p, t, decode.data());
  }
  out.decode_out = make_array(out_shape, to_files(widened(decode)), NpyDtype::float32);

  // The reference, head by head, on the same rounded values.
  Mamba2Inputs rounded;
  rounded.batch = batch;
  rounded.heads = heads;
  rounded.groups = groups;
  rounded.tokens = length;
  rounded.head_dim = p;
  rounded.state_size = n;
  rounded.x = x;
  rounded.z = z;
  rounded.dt_raw = dt;
  rounded.B = B;
  rounded.C = C;
  rounded.A_log = A_log;
  rounded.dt_bias = dt_bias;
  rounded.D = D;
  std::vector<double> reference(x.size()), reference_state(state.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t bh = 0; bh < rows; ++bh) {
    const Mamba2ReferenceResult r =
        mamba2_ssd_scan(rounded.head_sequence(bh, length), rounded.head_parameters(bh % heads));
    const std::int64_t b = bh / heads, h = bh % heads;
    for (std::int64_t t = 0; t < length; ++t) {
      for (std::int64_t i = 0; i < p; ++i) reference[((b * length + t) * heads + h) * p + i] = r.outputs(t, i);
    }
    std::copy(r.state.data.begin(), r.state.data.end(), reference_state.begin() + bh * p * n);
  }
  out.reference_out = make_array(out_shape, reference, NpyDtype::float64);

  out.states.push_back(kernel_state("final_state", {batch, heads, p, n}, mamba2_states_to_files(state, rows, n, p),
                                    mamba2_states_to_files(decode_state, rows, n, p), reference_state));
  out.options.set(mamba2_state_size_option().key, n);
  out.options.set(mamba2_groups_option().key, groups);
  out.options.set(mamba2_chunk_option().key, chunk);
  out.options_json = {{"state_size", n}, {"n_groups", groups}, {"ssd_chunk", chunk}};
  out.details = {{"prefill_chunk", chunk}};
  return out;
}

class Mamba2Conformance final : public MechanismConformance {
 public:
  Mamba2Conformance() : MechanismConformance({"mamba2", 0, ARCH_BENCH_CUDA_ONLY(mamba2_conformance_on_cuda)}) {}

 private:
  ConformanceSpec describe(const MechanismOptions&) const override {
    ConformanceSpec spec;
    spec.inputs = {{"ssd_x", kChannelAxes, "input x of the SSD, per head and channel"},
                   {"ssd_dt", {"batch", "length", "heads"}, "dt before its bias and softplus, per head"},
                   {"ssd_z", kChannelAxes, "gate: out = y * silu(z)"},
                   {"ssd_B", kGroupAxes, "input-dependent B_t, shared by the heads of a group"},
                   {"ssd_C", kGroupAxes, "input-dependent C_t, shared by the heads of a group"},
                   {"ssd_A_log", {"heads"}, "A = -exp(A_log) < 0, per head", true},
                   {"ssd_dt_bias", {"heads"}, "dt = softplus(dt + dt_bias)", true},
                   {"ssd_D", {"heads"}, "skip: y_t = H_t C_t + D x_t", true}};
    spec.outputs = standard_outputs(kChannelAxes, "out_t = (H_t C_t + D x_t) * silu(z_t)");
    add_state_outputs(spec.outputs, "final_state", {"batch", "heads", "dim", "N"},
                      "H after the last token, fp32 (from the prefill)", "H from the fp64 reference");
    spec.options = "`--ssd-chunk` (the prefill's chunk length) at run time; N and n_groups are read from ssd_B.npy. "
                   "`--state-size` and `--n-groups` size them for --generate (n_groups must divide --heads).";
    spec.notes = "Per head h of group g = h / (heads / n_groups): dt_t = softplus(dt_t + dt_bias), a_t = exp(dt_t A), "
                 "H_t = a_t H_{t-1} + dt_t x_t B_t^T from H = 0 (H is dim x N), y_t = H_t C_t + D x_t, "
                 "out_t = y_t silu(z_t): the gate Mamba-2 applies inside its gated RMSNorm, without the norm. "
                 "This is mamba_ssm's mamba_chunk_scan_combined(x, dt, -exp(A_log), B, C, chunk_size, D=D, z=z, "
                 "dt_bias=dt_bias, dt_softplus=True, return_final_states=True). N and dim are at most 256.";
    return spec;
  }

  ConformanceOutputs run_checked(const ConformanceInputs& inputs, DType dtype,
                                 const MechanismOptions& options) const override {
    require_axis_at_most(inputs, "N", kMamba2MaxStateSize, "mamba2");
    require_axis_at_most(inputs, "dim", kMamba2MaxHeadDim, "mamba2");
    const std::int64_t heads = inputs.axis("heads"), groups = inputs.axis("n_groups");
    if (heads % groups != 0) {
      throw UsageError(fmt::format("mamba2: ssd_B.npy has {} groups, which does not divide the {} heads", groups, heads));
    }
    const std::int64_t chunk = mamba2_chunk_option().integer(options);
    if (chunk > kMamba2MaxChunk) {
      throw UsageError(fmt::format("--ssd-chunk {}: mamba2 takes a chunk from 1 to {}", chunk, kMamba2MaxChunk));
    }
    return dtype == DType::bfloat16 ? run_typed<bf16>(inputs, dtype, chunk) : run_typed<float>(inputs, dtype, chunk);
  }
  // The inputs and parameters `arch-bench run --seed` draws for a prefill cell of this shape
  // (mechanisms/mamba2/inputs.hpp), in the files' token-major layout.
  std::map<std::string, NpyArray> draw(const ConformanceShape& shape, const MechanismOptions& options,
                                       std::uint64_t seed, DType dtype) const override {
    const std::int64_t n = mamba2_state_size_option().integer(options);
    const std::int64_t groups = mamba2_groups_option().integer(options);
    if (n < 1 || n > kMamba2MaxStateSize) {
      throw UsageError(fmt::format("--state-size {}: mamba2 takes N from 1 to {}", n, kMamba2MaxStateSize));
    }
    if (shape.dim > kMamba2MaxHeadDim) {
      throw UsageError(fmt::format("--dim {}: mamba2 takes a head_dim up to {}", shape.dim, kMamba2MaxHeadDim));
    }
    Cell cell = generated_cell(shape, options, dtype);
    cell.options.set(mamba2_state_size_option().key, n);
    cell.options.set(mamba2_groups_option().key, groups);
    const Mamba2Inputs in = make_mamba2_inputs(cell, shape.length, seed);  // UsageError when groups do not divide
    const std::int64_t b = shape.batch, l = shape.length, h = shape.heads, p = shape.dim;
    return {{"ssd_x", make_array({b, l, h, p}, mamba2_swap_middle(in.x, b, h, l, p), NpyDtype::float32)},
            {"ssd_dt", make_array({b, l, h}, mamba2_swap_middle(in.dt_raw, b, h, l, 1), NpyDtype::float32)},
            {"ssd_z", make_array({b, l, h, p}, mamba2_swap_middle(in.z, b, h, l, p), NpyDtype::float32)},
            {"ssd_B", make_array({b, l, groups, n}, mamba2_swap_middle(in.B, b, groups, l, n), NpyDtype::float32)},
            {"ssd_C", make_array({b, l, groups, n}, mamba2_swap_middle(in.C, b, groups, l, n), NpyDtype::float32)},
            {"ssd_A_log", make_array({h}, in.A_log, NpyDtype::float32)},
            {"ssd_dt_bias", make_array({h}, in.dt_bias, NpyDtype::float32)},
            {"ssd_D", make_array({h}, in.D, NpyDtype::float32)}};
  }
};

}  // namespace

const ConformanceAdapter& mamba2_conformance() { return adapter_instance<Mamba2Conformance>(); }

}  // namespace arch_bench
