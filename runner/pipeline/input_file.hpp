#pragma once
// Every file arch-bench reads because a user named it (result reports for `validate` and `diff`,
// profiles, .npy inputs of `conformance`) is read here, and only if it is a regular file no larger
// than a cap: `/dev/zero` would be read until memory runs out and a FIFO would block forever.
// Every problem is a UsageError (exit 2) whose message starts with the path.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace arch_bench {

inline constexpr std::uint64_t kDefaultMaxInputBytes = std::uint64_t{256} << 20;  // 256 MiB
// Raises (or lowers) the cap: a number of bytes, optionally with a K, M or G suffix (powers of 1024).
inline constexpr const char* kMaxInputBytesVariable = "ARCH_BENCH_MAX_INPUT_BYTES";

// The cap in force: ARCH_BENCH_MAX_INPUT_BYTES when set, else kDefaultMaxInputBytes. Throws
// UsageError for a value that is not a positive size.
std::uint64_t max_input_bytes();
// "512M" -> 536870912, "1024" -> 1024; 0 for anything that is not a positive size that fits 64 bits.
std::uint64_t parse_byte_size(std::string_view text);

// The whole content of `path`. `what` names the kind of file in messages ("result report",
// "profile", ".npy file"). Refuses anything but a regular file (folders, FIFOs, devices, sockets)
// and files larger than max_input_bytes(), before reading a byte of them.
std::string read_input_file(const std::filesystem::path& path, std::string_view what);

}  // namespace arch_bench
