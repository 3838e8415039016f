// KernelCost: the measured run time of one kernel with and without the
// intra-op pool, and from it whether the next run should use the pool.
#ifndef RILL_RUNTIME_EXEC_KERNEL_COST_H_
#define RILL_RUNTIME_EXEC_KERNEL_COST_H_

#include <atomic>
#include <cstdint>

namespace rill {

// Splitting a kernel across threads pays only when its work outweighs
// waking them. Where that line lies depends on the machine (a thread wake
// costs 5 us on bare metal and 30-45 us on some virtual machines, where a
// 64x784x128 product ran 1.6x slower on two threads than on one) and on the
// kernel, so it is measured rather than guessed: each kernel tries both
// ways, then keeps the faster and retries the other now and then in case
// its inputs have changed size. Retries are spaced by how much slower the
// other way was (a wake on a busy virtual machine can cost milliseconds),
// so that they cost at most 1/kRetryEvery of the kernel's time.
//
// Thread safety: all methods may be called concurrently. Concurrent
// records may lose one sample; an estimate is only a guide.
class KernelCost {
 public:
  // Whether the next run should use the intra-op pool.
  bool UseParallel();
  // Records one run of `nanos`, made with or without the pool.
  void Record(bool parallel, int64_t nanos);
  // The faster way's estimated run time; 0 until a run has been measured.
  int64_t EstimateNanos() const;

  // One run in kRetryEvery * (slower / faster time) retries the slower
  // way; the ratio counts up to kMaxRetrySpacing.
  static constexpr uint32_t kRetryEvery = 64;
  static constexpr uint32_t kMaxRetrySpacing = 64;

 private:
  struct Way {
    std::atomic<int64_t> nanos{0};  // Moving average.
    std::atomic<uint32_t> samples{0};
  };
  Way serial_;
  Way parallel_;
  std::atomic<uint32_t> choices_{0};
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_KERNEL_COST_H_
