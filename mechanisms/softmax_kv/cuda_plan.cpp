#include "mechanisms/softmax_kv/cuda_plan.hpp"

#include "core/checked_size.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace arch_bench {

namespace {

constexpr std::int64_t kMaxHeadDim = 256;     // the SIMT prefill keeps dim / 32 <= 8 floats per lane
constexpr std::int64_t kMaxGridY = 65535;     // batch_heads is grid.y of every kernel
constexpr std::int64_t kTensorCoreMaxDim = 128;
constexpr int kTensorCoreTile = 64;
constexpr int kSimtTile = 32;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::size_t round_up(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}
int next_power_of_two(std::int64_t n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// Places the regions one after another, each starting on kSharedAlignment (wmma needs 32-byte
// aligned fragment pointers; 128 keeps 16-byte vector stores aligned too).
class SharedLayout {
 public:
  std::size_t add(std::size_t bytes) {
    const std::size_t offset = end_;
    end_ = round_up(end_ + bytes, kSharedAlignment);
    return offset;
  }
  std::size_t bytes() const { return end_; }

 private:
  std::size_t end_ = 0;
};

}  // namespace

SoftmaxDecodeCudaPlan plan_softmax_decode_cuda(std::int64_t batch_heads, std::int64_t group, std::int64_t dim,
                                               DType dtype, std::int64_t capacity, std::int64_t context,
                                               int multiprocessors) {
  const int elem_bytes = static_cast<int>(dtype_bytes(dtype));
  if (batch_heads < 1 || dim < 1 || context < 1 || context > capacity) {
    throw std::invalid_argument("plan_softmax_decode_cuda: needs batch_heads, dim >= 1 and 1 <= context <= capacity");
  }
  if (group < 1 || batch_heads % group != 0) {
    throw std::invalid_argument("plan_softmax_decode_cuda: the query group does not divide the heads");
  }
  if (dim * elem_bytes % kVectorBytes != 0) {
    throw std::invalid_argument("plan_softmax_decode_cuda: a row of head_dim elements is not a whole number of 16-byte vectors");
  }
  SoftmaxDecodeCudaPlan plan;
  plan.batch_heads = batch_heads;
  plan.group = group;
  plan.dim = dim;
  plan.capacity = capacity;
  plan.context = context;
  plan.elem_bytes = elem_bytes;

  // The smallest instance that holds the whole group, or slices of kDecodeMaxQueriesPerBlock.
  plan.queries_per_block = next_power_of_two(std::min<std::int64_t>(group, kDecodeMaxQueriesPerBlock));
  plan.query_slices = ceil_div(group, plan.queries_per_block);

  const std::int64_t target_blocks = std::int64_t{kDecodeBlocksPerMultiprocessor} * std::max(multiprocessors, 1);
  const std::int64_t wanted = ceil_div(target_blocks, plan.head_blocks());
  const std::int64_t allowed = std::clamp<std::int64_t>(context / kDecodeMinRowsPerSplit, 1, kDecodeMaxSplits);
  // splits <= context / kDecodeMinRowsPerSplit, and balanced splits hold >= context / splits rows.
  plan.splits = std::clamp<std::int64_t>(wanted, 1, allowed);

  plan.vector_elems = kVectorBytes / elem_bytes;
  plan.vectors_per_row = static_cast<int>(dim / plan.vector_elems);
  // A power of two so that the dot product reduces with xor shuffles inside aligned lane groups;
  // lanes past vectors_per_row (head_dim not a power of two) idle.
  plan.lanes_per_row = std::min(32, next_power_of_two(plan.vectors_per_row));
  plan.vectors_per_lane = static_cast<int>(ceil_div(plan.vectors_per_row, plan.lanes_per_row));
  plan.row_groups = plan.threads / plan.lanes_per_row;
  plan.rows_per_iteration = plan.row_groups * decode_rows_in_flight(plan.queries_per_block);
  plan.shared_bytes = static_cast<std::size_t>(plan.row_groups) * static_cast<std::size_t>(dim + 3) * sizeof(float);
  plan.combine_threads = static_cast<int>(std::clamp<std::int64_t>(ceil_div(dim, 32) * 32, 32, 256));
  return plan;
}

std::int64_t softmax_decode_cuda_workspace_bytes_bound(const Cell& cell) {
  const std::int64_t context = checked_add(cell.sequence_length, 1);
  const std::int64_t splits = std::clamp<std::int64_t>(context / kDecodeMinRowsPerSplit, 1, kDecodeMaxSplits);
  return checked_product(cell.batch_heads(), splits, checked_add(cell.head_dim, 2),
                         static_cast<std::int64_t>(sizeof(float)));
}

SoftmaxPrefillCudaPlan plan_softmax_prefill_cuda(std::int64_t batch_heads, std::int64_t group, std::int64_t tokens,
                                                 std::int64_t dim, DType dtype, std::int64_t window) {
  if (group < 1 || batch_heads % group != 0) {
    throw std::invalid_argument("plan_softmax_prefill_cuda: the query group does not divide the heads");
  }
  if (window < 0) throw std::invalid_argument("plan_softmax_prefill_cuda: window must be >= 0 (0: no window)");
  SoftmaxPrefillCudaPlan plan = plan_softmax_prefill_cuda(batch_heads, tokens, dim, dtype);
  plan.group = group;
  plan.window = window;
  return plan;
}

SoftmaxPrefillPath softmax_prefill_path(DType dtype, std::int64_t dim) {
  if (dtype == DType::bfloat16 && prefill_mma_takes(dim)) return SoftmaxPrefillPath::mma_bf16;
  if (dtype == DType::bfloat16 && dim % 16 == 0 && dim <= kTensorCoreMaxDim) return SoftmaxPrefillPath::tensor_core_bf16;
  return SoftmaxPrefillPath::simt;
}

const char* softmax_prefill_path_name(SoftmaxPrefillPath path) {
  switch (path) {
    case SoftmaxPrefillPath::mma_bf16: return "mma_bf16";
    case SoftmaxPrefillPath::tensor_core_bf16: return "wmma_bf16";
    case SoftmaxPrefillPath::simt: return "simt";
  }
  return "unknown";
}

std::string softmax_hand_kernel_name(Phase phase, DType dtype, std::int64_t dim) {
  if (phase == Phase::decode) return "hand: decode simt";
  return std::string("hand: prefill ") + softmax_prefill_path_name(softmax_prefill_path(dtype, dim));
}

std::string softmax_hand_conformance_kernels(DType dtype, std::int64_t dim) {
  return softmax_hand_kernel_name(Phase::prefill, dtype, dim) + ", decode simt";
}

SoftmaxPrefillCudaPlan plan_softmax_prefill_cuda(std::int64_t batch_heads, std::int64_t tokens,
                                                 std::int64_t dim, DType dtype) {
  if (batch_heads < 1 || dim < 1 || tokens < 0) {
    throw std::invalid_argument("plan_softmax_prefill_cuda: needs batch_heads, dim >= 1 and tokens >= 0");
  }
  SoftmaxPrefillCudaPlan plan;
  plan.batch_heads = batch_heads;
  plan.tokens = tokens;
  plan.dim = dim;
  const int d = static_cast<int>(dim);
  SharedLayout layout;
  plan.path = softmax_prefill_path(dtype, dim);
  if (plan.path == SoftmaxPrefillPath::mma_bf16) {
    plan.query_rows = kTensorCoreTile;  // 4 warps x 16 rows
    plan.keys_per_tile = kTensorCoreTile;
    // Rows padded by 16 bytes: a pitch of (dim + 8) * 2 bytes is 4 banks past a multiple of 128
    // bytes, so the 8 rows of one ldmatrix 8x8 matrix land on 8 disjoint groups of 4 banks.
    plan.ld_q = plan.ld_k = plan.ld_v = d + 8;
    const std::size_t tile_bytes = std::size_t{kTensorCoreTile} * static_cast<std::size_t>(plan.ld_k) * 2;
    plan.kv_stages = kPrefillMmaKvStages;
    plan.kv_stage_bytes = round_up(tile_bytes, kSharedAlignment);
    plan.q_offset = layout.add(tile_bytes);
    plan.k_offset = layout.add(plan.kv_stage_bytes * plan.kv_stages);
    plan.v_offset = layout.add(plan.kv_stage_bytes * plan.kv_stages);
  } else if (plan.path == SoftmaxPrefillPath::tensor_core_bf16) {
    plan.query_rows = kTensorCoreTile;
    plan.keys_per_tile = kTensorCoreTile;
    // Row pitches padded by 16 bytes so consecutive rows start in different banks; they stay
    // multiples of 16 bytes (wmma ldm: multiple of 8 bf16 / 4 floats).
    plan.ld_q = plan.ld_k = plan.ld_v = d + 8;
    plan.ld_s = kTensorCoreTile + 4;
    plan.ld_p = kTensorCoreTile + 8;
    plan.ld_o = d + 4;
    const std::size_t bf16_bytes = 2;
    plan.q_offset = layout.add(std::size_t{kTensorCoreTile} * plan.ld_q * bf16_bytes);
    plan.k_offset = layout.add(std::size_t{kTensorCoreTile} * plan.ld_k * bf16_bytes);
    plan.v_offset = layout.add(std::size_t{kTensorCoreTile} * plan.ld_v * bf16_bytes);
    plan.s_offset = layout.add(std::size_t{kTensorCoreTile} * plan.ld_s * sizeof(float));
    plan.p_offset = layout.add(std::size_t{kTensorCoreTile} * plan.ld_p * bf16_bytes);
    plan.o_offset = layout.add(std::size_t{kTensorCoreTile} * plan.ld_o * sizeof(float));
  } else {
    plan.query_rows = kSimtTile;
    plan.keys_per_tile = kSimtTile;
    plan.ld_q = d;
    plan.ld_k = d | 1;  // odd pitch: lane j walking row j hits bank (j + c) % 32, no conflicts
    plan.ld_v = d;
    plan.q_offset = layout.add(std::size_t{kSimtTile} * plan.ld_q * sizeof(float));
    plan.k_offset = layout.add(std::size_t{kSimtTile} * plan.ld_k * sizeof(float));
    plan.v_offset = layout.add(std::size_t{kSimtTile} * plan.ld_v * sizeof(float));
  }
  plan.query_tiles = ceil_div(tokens, plan.query_rows);
  plan.shared_bytes = layout.bytes();
  return plan;
}

std::optional<std::string> softmax_kv_cuda_unsupported(const Cell& cell) {
  const std::int64_t elem_bytes = static_cast<std::int64_t>(dtype_bytes(cell.dtype));
  if (cell.head_dim < 1 || cell.head_dim > kMaxHeadDim) {
    return "softmax_kv CUDA kernels take head_dim 1..256";
  }
  if (cell.head_dim * elem_bytes % kVectorBytes != 0) {
    return "softmax_kv CUDA kernels load rows as 16-byte vectors: head_dim must be a multiple of " +
           std::to_string(kVectorBytes / elem_bytes) + " for " + dtype_name(cell.dtype) + " (got " +
           std::to_string(cell.head_dim) + ")";
  }
  if (cell.batch_heads() > kMaxGridY) {
    return "softmax_kv CUDA kernels take batch * heads up to 65535 (one grid row per head), got " +
           std::to_string(cell.batch_heads());
  }
  if (cell.sequence_length + 1 > std::numeric_limits<std::int32_t>::max()) {
    return "softmax_kv CUDA kernels index rows with 32-bit integers: sequence_length must stay below 2^31 - 1";
  }
  return std::nullopt;
}

}  // namespace arch_bench
