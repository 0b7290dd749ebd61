#pragma once
// The per-(channel, state entry) prefill kernel's passes (cuda_entry.cu), launched by
// launch_mamba_prefill (cuda.cu) for a plan whose kernel is entry; cuda_plan.hpp
// describes the geometry. Internal to the mamba CUDA sources.
#include "mechanisms/common/cuda_declarations.hpp"
#include "mechanisms/mamba/cuda_plan.hpp"

namespace arch_bench {

// One pass of the entry kernel over plan.segments (outputs) or plan.segments - 1 (the map pass of a
// split plan) segments. outputs: h enters from `entering` ((row, segment) slots of the workspace
// layout, or `state` unsplit), out is written and the last segment leaves h in `state`. Map pass:
// h from zero, the segment's end h and dt sum into `workspace`.
template <class T>
void launch_mamba_entry_pass(const MambaPrefillPlan& plan, const MambaParameters& params, const MambaTokens<T>& x,
                             const float* entering, float* state, float* workspace, T* out, bool outputs,
                             CUstream_st* stream);

}  // namespace arch_bench
