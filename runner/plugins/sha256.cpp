#include "runner/plugins/sha256.hpp"

#include <nettle/sha2.h>

#include <fmt/format.h>

namespace arch_bench {

std::string sha256_hex(const std::string& bytes) {
  sha256_ctx context;
  sha256_init(&context);
  sha256_update(&context, bytes.size(), reinterpret_cast<const std::uint8_t*>(bytes.data()));
  std::uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&context, SHA256_DIGEST_SIZE, digest);
  std::string hex;
  for (std::uint8_t byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

}  // namespace arch_bench
