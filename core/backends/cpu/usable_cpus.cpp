#include "core/backends/cpu/usable_cpus.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace arch_bench {

cpu_set_t process_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (const int places = omp_get_num_places(); places > 0) {
    for (int place = 0; place < places; ++place) {
      std::vector<int> ids(static_cast<std::size_t>(std::max(0, omp_get_place_num_procs(place))));
      omp_get_place_proc_ids(place, ids.data());
      for (const int id : ids) {
        if (id >= 0 && id < CPU_SETSIZE) CPU_SET(id, &mask);
      }
    }
    if (CPU_COUNT(&mask) > 0) return mask;
  }
  if (::sched_getaffinity(0, sizeof(mask), &mask) == 0 && CPU_COUNT(&mask) > 0) return mask;
  CPU_ZERO(&mask);
  const unsigned online = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned cpu = 0; cpu < online && cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &mask);
  return mask;
}

int usable_cpus() {
  const cpu_set_t mask = process_cpus();
  return std::max(1, CPU_COUNT(&mask));
}

}  // namespace arch_bench
