// What the GPU benchmarks share: skipping without a GPU, CUDA, cuBLAS and
// cuDNN results as statuses, owned handles and device buffers, and timing
// library calls and session steps the same way.
#ifndef RILL_BENCHES_GPU_BENCH_UTIL_H_
#define RILL_BENCHES_GPU_BENCH_UTIL_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "graph/proto/graph.pb.h"
#include "graph/scope.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace rill::gpu_bench {

// Skips `state` and returns false when the process has no GPU.
bool HaveGpu(benchmark::State& state);
// Skips `state` with the status's message and returns true on an error.
bool Failed(benchmark::State& state, const absl::Status& status);

// The result of a CUDA, cuBLAS or cuDNN call as a status, `what` naming
// the call.
absl::Status Check(cudaError_t error, const char* what);
absl::Status Check(cublasStatus_t status, const char* what);
absl::Status Check(cudnnStatus_t status, const char* what);

// Destroys a CUDA, cuBLAS or cuDNN object through its C API's `kDestroy`.
template <auto kDestroy>
struct Destroyer {
  template <typename T>
  void operator()(T* object) const {
    static_cast<void>(kDestroy(object));
  }
};

// A CUDA, cuBLAS or cuDNN object of a handle type such as cudaStream_t,
// owned: destroyed with `kDestroy`.
template <typename Handle, auto kDestroy>
using Owned = std::unique_ptr<std::remove_pointer_t<Handle>, Destroyer<kDestroy>>;

// Gives `owned` the object that `create(&object)` makes.
template <typename T, typename D, typename Create>
absl::Status Make(std::unique_ptr<T, D>& owned, Create create, const char* what) {
  T* object = nullptr;
  RETURN_IF_ERROR(Check(create(&object), what));
  owned.reset(object);
  return absl::OkStatus();
}

using DeviceFloats = Owned<float*, cudaFree>;

absl::StatusOr<DeviceFloats> NewDeviceFloats(int64_t count);
// `count` floats on the device, random uniform in [0, 1) as RandomUniform
// gives the session's variables: a GPU multiplying zeros draws less power
// and may clock higher than on real data, which would flatter a baseline.
absl::StatusOr<DeviceFloats> RandomDeviceFloats(int64_t count, uint32_t seed);

void SetTflops(benchmark::State& state, double flops);

// Times `call` (one library call queued on `stream`, returning its
// status), each time copying one element of `output` to the host and
// waiting for it, as a session step fetching one element waits for its
// result.
template <typename Call>
void TimeLibraryCalls(benchmark::State& state, cudaStream_t stream, const float* output,
                      double flops, const char* what, Call call) {
  float element = 0;
  for (auto _ : state) {
    const absl::Status called = Check(call(), what);
    const cudaError_t copied =
        cudaMemcpyAsync(&element, output, sizeof(float), cudaMemcpyDeviceToHost, stream);
    if (Failed(state, called) || Failed(state, Check(copied, "cudaMemcpyAsync")) ||
        Failed(state, Check(cudaStreamSynchronize(stream), what))) {
      break;
    }
  }
  benchmark::DoNotOptimize(element);
  SetTflops(state, flops);
}

// A session over `graph` that has run `init`; nullptr (and `state`
// skipped) when either fails.
std::unique_ptr<Session> InitializedSession(benchmark::State& state, const GraphDef& graph,
                                            const std::string& init);
// Times Session::Run fetching `fetch` (one element of a result computed
// on /gpu:0), in a session over `root`'s graph with its variables
// initialized.
void TimeSessionSteps(benchmark::State& state, const Scope& root, const Output& fetch,
                      double flops);
// A variable of `shape` (int32) on the scope's device, initialized with
// random uniform values in [0, 1).
Output RandomVariable(const Scope& root, std::string_view name, const ops::Input& shape);

}  // namespace rill::gpu_bench

#endif  // RILL_BENCHES_GPU_BENCH_UTIL_H_
