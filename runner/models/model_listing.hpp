#pragma once
// `arch-bench list --models`: every preset with its layer types, the cache/state bytes one sequence
// holds at each context length, and the largest batch that fits in the planning memory after the
// weights; "cannot run yet: ..." where this build lacks a mechanism or option a layer type needs.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace arch_bench {

struct ModelListingRequest {
  std::vector<std::int64_t> contexts{8192, 32768, 131072};
  DType dtype = DType::bfloat16;  // the K/V cache's storage dtype
  std::int64_t memory_bytes = 0;
  std::string memory_source;
};

// One entry per preset found (known_model_ids()); a file that does not load is listed with its error.
nlohmann::json model_listing(const ModelListingRequest& request);
void print_model_listing(std::FILE* out, const nlohmann::json& listing);

}  // namespace arch_bench
