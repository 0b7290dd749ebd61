// libFuzzer target: a profile as `run --profile` and `preflight --profile` load it. Bytes ->
// json_input -> schema -> typed Profile. Only a UsageError (exit 2) may leave.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "runner/profiles/profile.hpp"
#include "runner/report/json_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace arch_bench;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json document = parse_json_input(text, "FUZZ.json");
    // Name the file after the id it holds, so that parsing goes past the id check to the settings.
    std::string stem = "FUZZ";
    if (document.is_object() && document.contains("id") && document["id"].is_string()) {
      stem = document["id"].get<std::string>();
    }
    parse_profile(document, std::filesystem::path("profiles") / (stem + ".json"));
  } catch (const UsageError&) {
  }
  return 0;
}
