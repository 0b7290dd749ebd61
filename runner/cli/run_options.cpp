#include "runner/cli/run_options.hpp"

#include <thread>

#include <fmt/format.h>

#include "mechanisms/common/feature_maps.hpp"
#include "runner/cli/parse_lists.hpp"
#include "runner/core/errors.hpp"

namespace arch_bench {

void add_run_options(CLI::App& c, RunOptions& o) {
  c.add_option("--mode", o.mode, "Comparison preset (see `arch-bench list`)")->capture_default_str();
  c.add_option("--sequence-lengths", o.sequence_lengths,
               "Comma-separated context lengths L, e.g. 512,2048,8192 (mode default when omitted)");
  c.add_option("--batch", o.batch, "Sequences per step (default 1)");
  c.add_option("--query-heads,--heads", o.heads, "Attention heads (default 8)");
  c.add_option("--head-dim", o.head_dim, "Features per head, dk = dv (default 64)");
  c.add_option("--dtype", o.dtype, "Storage dtype: bfloat16|bf16 or float32|fp32 (fp32 accumulation)");
  c.add_option("--phase", o.phase,
               "decode (one token against a context of L), prefill (L tokens, causal) or decode,prefill");
  c.add_option("--warmup", o.warmup, "Untimed calls per cell before the timed repeats (default 10)");
  c.add_option("--repeats", o.repeats, "Timed samples per cell, every one kept in the report (default 100)");
  c.add_option("--cache", o.cache,
               "cold: evict the cell's buffers from every cache before each sample (default; what a decode "
               "step sees when many layers share the cache); hot: leave them cached");
  c.add_option("--run-label", o.run_label, "Names this run; the result file is <experiment>_<run_label>.json")
      ->capture_default_str();
  c.add_option("--output", o.output, "Result file path (default results/<experiment>_<run_label>.json)");
  c.add_option("--results-dir", o.results_dir, "Folder for the default result path")->capture_default_str();
  c.add_flag("--overwrite", o.overwrite, "Replace an existing result file (never done otherwise)");
  c.add_option("--seed", o.seed, "Seed of the random inputs; baseline and candidates share it")
      ->capture_default_str();
  c.add_option("--threads", o.threads, "CPU threads (default: every hardware thread)");
  c.add_option("--device", o.device, "cpu, cuda, or auto (CUDA when a usable GPU has kernels, else CPU)")
      ->capture_default_str();
  c.add_option("--semantic-id", o.semantic_id, "Identity of the mechanism question (mode default)");
  c.add_option("--workload-id", o.workload_id, "Identity of the workload definition (mode default)");
  c.add_option("--profile-id", o.profile_id, "Environment profile recorded in the report (default ARCH-CPU-MECHANISM)");
  c.add_option("--feature-map", o.feature_map, "linear_attention feature map: elu (elu+1, default) or relu (relu+1)");
  c.add_option("--features", o.features, "performer: comma-separated random feature counts m (default 64,128,256)");
  c.add_option("--state-size", o.state_size, "mamba: state size N per channel (default 16)");
  c.add_flag("--quiet,-q", o.quiet, "No progress lines on stderr");
}

namespace {
bool given(const RunOptions& o, const char* name) { return o.sources.contains(name); }

std::int64_t positive(const char* option, std::int64_t value) {
  if (value <= 0) throw UsageError(fmt::format("{} must be a positive integer (got {})", option, value));
  return value;
}
}  // namespace

Workload workload_from_options(const RunOptions& o, const Workload& defaults) {
  Workload w = defaults;
  if (given(o, "sequence_lengths")) w.sequence_lengths = parse_positive_list("--sequence-lengths", o.sequence_lengths);
  if (given(o, "batch")) w.batch = positive("--batch", o.batch);
  if (given(o, "query_heads")) w.heads = positive("--query-heads", o.heads);
  if (given(o, "head_dim")) w.head_dim = positive("--head-dim", o.head_dim);
  if (given(o, "dtype")) {
    const auto dtype = parse_dtype(o.dtype);
    if (!dtype) throw UsageError(fmt::format("--dtype: unknown dtype '{}' (use bfloat16/bf16 or float32/fp32)", o.dtype));
    w.dtype = *dtype;
  }
  if (given(o, "phase")) {
    w.phases.clear();
    for (const std::string& word : parse_word_list("--phase", o.phase)) {
      if (word == "decode") w.phases.push_back(Phase::decode);
      else if (word == "prefill") w.phases.push_back(Phase::prefill);
      else throw UsageError(fmt::format("--phase: unknown phase '{}' (use decode, prefill or decode,prefill)", word));
    }
  }
  if (given(o, "warmup")) {
    if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0 (got {})", o.warmup));
    w.warmup = o.warmup;
  }
  if (given(o, "repeats")) w.repeats = positive("--repeats", o.repeats);
  if (given(o, "cache")) {
    if (o.cache == "cold") w.cache_state = CacheState::cold;
    else if (o.cache == "hot") w.cache_state = CacheState::hot;
    else throw UsageError(fmt::format("--cache: '{}' is neither cold nor hot", o.cache));
  }
  w.threads = given(o, "threads") ? static_cast<int>(positive("--threads", o.threads))
                                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  w.seed = o.seed;
  if (given(o, "feature_map")) {
    if (!parse_feature_map(o.feature_map)) {
      throw UsageError(fmt::format("--feature-map: unknown feature map '{}' (use elu or relu)", o.feature_map));
    }
    w.options.feature_map = o.feature_map;
  }
  if (given(o, "features")) w.features = parse_positive_list("--features", o.features);
  if (given(o, "state_size")) w.options.state_size = positive("--state-size", o.state_size);
  if (o.device != "cpu" && o.device != "cuda" && o.device != "auto") {
    throw UsageError(fmt::format("--device: '{}' is not cpu, cuda or auto", o.device));
  }
  return w;
}

nlohmann::json settings_sources(const CLI::App& command) {
  nlohmann::json sources = nlohmann::json::object();
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_name() == "--help") continue;
    std::string name = option->get_single_name();
    for (char& c : name) c = c == '-' ? '_' : c;
    sources[name] = "command_line";
  }
  return sources;
}

}  // namespace arch_bench
