#include "kernels/framework/cpu_threads.h"

#include <thread>

namespace rill {

CpuThreads::CpuThreads(int num_threads) {
  if (num_threads <= 0)
    num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pool_ = std::make_unique<Eigen::ThreadPool>(num_threads);
  device_ = std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(), num_threads);
}

}  // namespace rill
