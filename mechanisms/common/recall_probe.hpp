#pragma once
// The pieces the mechanisms' state-capacity probes (mechanisms/capacity.hpp) share: a probe that is
// one fp64 read function and a line on its setting, one probe per parameter value kept for the life
// of the process (the landscape holds the pointer), and the two reads several mechanisms reduce to at
// their neutral setting (recall_reads.hpp).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "mechanisms/capacity.hpp"

namespace arch_bench {

class RecallProbe final : public CapacityProbe {
 public:
  using Read = std::function<MatrixD(const MatrixD& keys, const MatrixD& values)>;
  // key_width > 0: the state is addressed with keys of that width whatever the head_dim (mamba's N).
  RecallProbe(Read read, std::string setting, std::int64_t key_width = 0)
      : read_(std::move(read)), setting_(std::move(setting)), key_width_(key_width) {}

  MatrixD recall(const MatrixD& keys, const MatrixD& values) const override { return read_(keys, values); }
  std::string setting() const override { return setting_; }
  std::int64_t key_dim(std::int64_t head_dim) const override { return key_width_ > 0 ? key_width_ : head_dim; }

 private:
  Read read_;
  std::string setting_;
  std::int64_t key_width_;
};

// The probe make(key) builds, built once per key and kept for the life of the process. Each call
// site passes its own lambda, whose distinct type gives that site its own cache.
template <class Key, class Make>
const CapacityProbe& probe_per_key(const Key& key, Make make) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<const CapacityProbe>> probes;
  const std::lock_guard lock(mutex);
  auto& probe = probes[key];
  if (!probe) probe = make(key);
  return *probe;
}

}  // namespace arch_bench
