#pragma once
// .npy files on disk: the codec of core/npy.hpp behind the runner's file rules (input size cap,
// atomic writes, never replacing a file unless asked).
#include <filesystem>

#include "core/npy.hpp"

namespace arch_bench {

// The array in `path`, a regular file under the input cap (runner/pipeline/input_file.hpp).
NpyArray read_npy(const std::filesystem::path& path);

// Writes encode_npy(array) to `path` atomically (runner/report/atomic_write.hpp); never replaces
// an existing file unless `overwrite`.
void write_npy(const std::filesystem::path& path, const NpyArray& array, bool overwrite);

}  // namespace arch_bench
