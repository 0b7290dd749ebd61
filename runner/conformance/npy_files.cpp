#include "runner/conformance/npy_files.hpp"

#include "runner/pipeline/input_file.hpp"
#include "runner/report/atomic_write.hpp"

namespace arch_bench {

NpyArray read_npy(const std::filesystem::path& path) {
  std::string bytes;
  try {
    // A regular file under the input cap (runner/pipeline/input_file.hpp): not /dev/zero, not a FIFO.
    bytes = read_input_file(path, ".npy file");
  } catch (const UsageError& error) {
    throw NpyError(error.what());
  }
  return parse_npy(bytes, path.string());
}

void write_npy(const std::filesystem::path& path, const NpyArray& array, bool overwrite) {
  write_file_atomically(path, encode_npy(array), overwrite);
}

}  // namespace arch_bench
