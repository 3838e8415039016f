// Wall and whole-process CPU time summed over timed sections, for benches
// whose work moves between threads (a pool, a server's socket thread).
#ifndef RILL_BENCHES_BENCH_CLOCK_H_
#define RILL_BENCHES_BENCH_CLOCK_H_

#include <time.h>

#include <chrono>

namespace rill {

// The whole process's CPU time: work may move to a pool thread, and idle
// threads do not spin.
inline double ProcessCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Wall and CPU time summed over timed sections.
struct Clock {
  double ns = 0;
  double cpu_ns = 0;
  template <typename F>
  bool Time(F f) {
    const auto start = std::chrono::steady_clock::now();
    const double start_cpu = ProcessCpuNanos();
    const bool ok = f();
    cpu_ns += ProcessCpuNanos() - start_cpu;
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    return ok;
  }
};

}  // namespace rill

#endif  // RILL_BENCHES_BENCH_CLOCK_H_
