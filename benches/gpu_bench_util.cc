#include "benches/gpu_bench_util.h"

#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/variable.h"
#include "runtime/device/device_query.h"

namespace rill::gpu_bench {

bool HaveGpu(benchmark::State& state) {
  static const GpuQuery* const gpus = new GpuQuery(QueryGpuDevices());
  if (!gpus->devices.empty()) return true;
  state.SkipWithError(("no GPU: " + gpus->reason).c_str());
  return false;
}

bool Failed(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  state.SkipWithError(std::string(status.message()).c_str());
  return true;
}

absl::Status Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(error)));
}
absl::Status Check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cublasGetStatusString(status)));
}
absl::Status Check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudnnGetErrorString(status)));
}

absl::StatusOr<DeviceFloats> NewDeviceFloats(int64_t count) {
  DeviceFloats floats;
  RETURN_IF_ERROR(Make(
      floats, [count](float** p) { return cudaMalloc(p, count * sizeof(float)); }, "cudaMalloc"));
  return floats;
}

absl::StatusOr<DeviceFloats> RandomDeviceFloats(int64_t count, uint32_t seed) {
  std::vector<float> host(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  for (float& value : host) value = uniform(rng);
  ASSIGN_OR_RETURN(DeviceFloats floats, NewDeviceFloats(count));
  RETURN_IF_ERROR(
      Check(cudaMemcpy(floats.get(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice),
            "cudaMemcpy"));
  return floats;
}

void SetTflops(benchmark::State& state, double flops) {
  state.counters["TFLOPS"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

std::unique_ptr<Session> InitializedSession(benchmark::State& state, const GraphDef& graph,
                                            const std::string& init) {
  SessionOptions options;
  // Every op of these graphs has a GPU kernel; with soft placement a node
  // that lost its kernel would run on the CPU unnoticed, timing the wrong
  // thing. Without it, the session fails to build and the benchmark says why.
  options.allow_soft_placement = false;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
  if (Failed(state, session.status())) return nullptr;
  if (Failed(state, (*session)->Run({}, {}, {init}).status())) return nullptr;
  return std::move(*session);
}

void TimeSessionSteps(benchmark::State& state, const Scope& root, const Output& fetch,
                      double flops) {
  const Operation init = GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  if (Failed(state, graph.status())) return;
  std::unique_ptr<Session> session = InitializedSession(state, *graph, init.name());
  if (session == nullptr) return;
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = session->Run({}, {fetch.name()});
    if (Failed(state, out.status())) return;
  }
  SetTflops(state, flops);
}

Output RandomVariable(const Scope& root, std::string_view name, const ops::Input& shape) {
  return Variable(root, name, ops::RandomUniform(root, shape, DT_FLOAT)).value();
}

}  // namespace rill::gpu_bench
