#pragma once
// The CPUs this process may run on. Its affinity mask says, except under OpenMP binding: with
// OMP_PROC_BIND or OMP_PLACES set, libgomp binds the initial thread to the first place while it
// starts, before main(), so that thread's own mask is then one place, not the process's CPUs.
#include <sched.h>

namespace arch_bench {

// The union of libgomp's places when it has any (they are built from the mask the process started
// with), else the calling thread's affinity mask; every online CPU when neither can be read.
cpu_set_t process_cpus();

// CPU_COUNT of process_cpus(), at least 1: the default --threads, so that a process restricted by
// `taskset` or a container's cpuset does not oversubscribe its CPUs.
int usable_cpus();

}  // namespace arch_bench
