#include "runtime/exec/kernel_cost.h"

#include <algorithm>

namespace rill {
namespace {

// A way's first run pays for first-touched pages and cold caches, so it
// only stands in until the second; later runs move the average by 1/8.
constexpr uint32_t kWarmUpSamples = 2;
constexpr int64_t kAverageWeight = 8;

}  // namespace

bool KernelCost::UseParallel() {
  // Relaxed throughout: the counts and averages order nothing else.
  const uint32_t parallel_samples = parallel_.samples.load(std::memory_order_relaxed);
  const uint32_t serial_samples = serial_.samples.load(std::memory_order_relaxed);
  if (parallel_samples < kWarmUpSamples || serial_samples < kWarmUpSamples) {
    // The pool first: a kernel run only once is likely a big one.
    return parallel_samples <= serial_samples;
  }
  const int64_t parallel = parallel_.nanos.load(std::memory_order_relaxed);
  const int64_t serial = serial_.nanos.load(std::memory_order_relaxed);
  const int64_t faster = std::max<int64_t>(1, std::min(parallel, serial));
  const auto spacing = static_cast<uint32_t>(
      std::clamp<int64_t>(std::max(parallel, serial) / faster, 1, kMaxRetrySpacing));
  const uint32_t every = kRetryEvery * spacing;
  const bool retry = choices_.fetch_add(1, std::memory_order_relaxed) % every == every - 1;
  return (parallel < serial) != retry;
}

void KernelCost::Record(bool parallel, int64_t nanos) {
  Way& way = parallel ? parallel_ : serial_;
  const uint32_t samples = way.samples.fetch_add(1, std::memory_order_relaxed);
  if (samples < kWarmUpSamples) {
    way.nanos.store(nanos, std::memory_order_relaxed);
    return;
  }
  const int64_t average = way.nanos.load(std::memory_order_relaxed);
  way.nanos.store(average + (nanos - average) / kAverageWeight, std::memory_order_relaxed);
}

int64_t KernelCost::EstimateNanos() const {
  const bool has_serial = serial_.samples.load(std::memory_order_relaxed) > 0;
  const bool has_parallel = parallel_.samples.load(std::memory_order_relaxed) > 0;
  const int64_t serial = serial_.nanos.load(std::memory_order_relaxed);
  const int64_t parallel = parallel_.nanos.load(std::memory_order_relaxed);
  if (has_serial && has_parallel) return std::min(serial, parallel);
  if (has_serial) return serial;
  return has_parallel ? parallel : 0;
}

}  // namespace rill
