#include "runner/pipeline/run_result.hpp"

namespace arch_bench {

std::string role_name(Role role) { return role == Role::baseline ? "baseline" : "candidate"; }

std::string row_status_name(RowStatus status) {
  switch (status) {
    case RowStatus::ok: return "ok";
    case RowStatus::skipped: return "skipped";
    case RowStatus::failed: return "failed";
  }
  return "failed";
}

}  // namespace arch_bench
