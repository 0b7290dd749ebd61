#pragma once
// A fraction given on the command line as a percentage ("5%") or a fraction ("0.05"): diff's
// --min-effect, merge's --ceiling-tolerance.
#include <string>

namespace arch_bench {

// Throws UsageError naming `option`: not a non-negative finite number, or a bare number >= 1, which is
// refused because "5" is more likely 5% than 500%.
double parse_fraction(const std::string& text, const std::string& option);

}  // namespace arch_bench
