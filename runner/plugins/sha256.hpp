#pragma once
// SHA-256 of a plugin file's bytes (nettle), so that a report names exactly which plugin build it measured.
#include <string>

namespace arch_bench {

// Lower-case hex digest of `bytes`.
std::string sha256_hex(const std::string& bytes);

}  // namespace arch_bench
