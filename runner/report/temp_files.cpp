#include "runner/report/temp_files.hpp"

#include <climits>
#include <cstring>
#include <unistd.h>

#include <atomic>

namespace arch_bench {

namespace {

constexpr int kSlots = 128;
constexpr int kFree = 0, kFilling = 1, kReady = 2;

struct Slot {
  std::atomic<int> state{kFree};
  std::atomic<unsigned> order{0};  // registration order: folders are removed newest first
  bool folder = false;
  char path[PATH_MAX] = {};
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<unsigned>::is_always_lock_free,
              "the table is read from a signal handler");

Slot slots[kSlots];
std::atomic<unsigned> next_order{1};

}  // namespace

TempPath::TempPath(const std::filesystem::path& path, Kind kind) {
  const std::string& text = path.native();
  if (text.empty() || text.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(slots[i].path, text.c_str(), text.size() + 1);
    slots[i].folder = kind == Kind::folder;
    slots[i].order.store(next_order.fetch_add(1));
    slots[i].state.store(kReady);
    slot_ = i;
    return;
  }
}

TempPath& TempPath::operator=(TempPath&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

void TempPath::release() noexcept {
  if (slot_ < 0) return;
  slots[slot_].state.store(kFree);
  slot_ = -1;
}

void remove_registered_temp_paths() noexcept {
  for (Slot& slot : slots) {
    if (slot.state.load() == kReady && !slot.folder) ::unlink(slot.path);
  }
  // Folders newest first: a staging folder before the output folder it was made in.
  unsigned below = ~0u;
  while (true) {
    int newest = -1;
    unsigned newest_order = 0;
    for (int i = 0; i < kSlots; ++i) {
      const unsigned order = slots[i].order.load();
      if (slots[i].state.load() == kReady && slots[i].folder && order < below && order > newest_order) {
        newest = i;
        newest_order = order;
      }
    }
    if (newest < 0) break;
    ::rmdir(slots[newest].path);
    below = newest_order;
  }
}

}  // namespace arch_bench
