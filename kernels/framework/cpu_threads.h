// CpuThreads: an Eigen thread pool and the ThreadPoolDevice that kernels use
// for intra-op parallelism.
#ifndef RILL_KERNELS_FRAMEWORK_CPU_THREADS_H_
#define RILL_KERNELS_FRAMEWORK_CPU_THREADS_H_

#include <memory>

#include "unsupported/Eigen/CXX11/Tensor"

namespace rill {

// Thread safety: the device may be used from any thread.
class CpuThreads {
 public:
  // num_threads <= 0: one per hardware thread.
  explicit CpuThreads(int num_threads);
  int num_threads() const { return pool_->NumThreads(); }
  const Eigen::ThreadPoolDevice& device() const { return *device_; }

 private:
  std::unique_ptr<Eigen::ThreadPool> pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> device_;
};

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_CPU_THREADS_H_
