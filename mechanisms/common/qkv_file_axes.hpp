#pragma once
// The axes of the q/k/v mechanisms' conformance files (`arch-bench conformance`): q and k
// [batch, heads, length, dim]; v and the outputs [batch, heads, length, dv].
#include <string>
#include <vector>

namespace arch_bench {

inline const std::vector<std::string> kQueryKeyAxes = {"batch", "heads", "length", "dim"};
inline const std::vector<std::string> kValueAxes = {"batch", "heads", "length", "dv"};

}  // namespace arch_bench
