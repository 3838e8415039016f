// RPC requests to a worker, as its server decodes and serves them: the
// WorkerService methods (RegisterGraph, RunGraph, PushTensor, AbortStep,
// DeregisterGraph, GetStatus) of a fresh two-CPU worker, called in order.
// A RunGraph or DeregisterGraph whose graph handle is empty gets the
// handle the last RegisterGraph returned (a peer learns it from the
// reply; the fuzzer cannot guess it). Steps still running at the end are
// aborted, as a master does at a deadline. Invariants: every call is
// answered exactly once, and every step ends once it is aborted.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/distributed/worker_service.h"
#include "runtime/session/worker.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/service_calls.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill::fuzz {
namespace {

// How long a step may run before it is aborted. Steps of the small graphs
// and tensors here take milliseconds; what waits longer waits for input
// that will not come (a queue, a receive from another task).
constexpr absl::Duration kStepTime = absl::Seconds(1);
constexpr absl::Duration kAbortTime = absl::Seconds(20);

std::unique_ptr<Worker> NewWorker() {
  WorkerOptions options;
  options.task = "/job:worker/replica:0/task:0";
  options.device_count = {{"CPU", 2}};
  options.inter_op_threads = 2;
  options.intra_op_threads = 1;
  absl::StatusOr<std::unique_ptr<Worker>> worker = Worker::Create(options);
  Check(worker.ok(), "cannot create a worker");
  return *std::move(worker);
}

// Fills an empty graph handle with `handle`.
void FillHandle(ServiceRequest& request, const std::string& handle) {
  if (request.method == "RunGraph") {
    RunGraphRequest body;
    if (body.ParseFromString(request.message.body) && body.graph_handle().empty()) {
      body.set_graph_handle(handle);
      request.message.body = body.SerializeAsString();
    }
  } else if (request.method == "DeregisterGraph") {
    DeregisterGraphRequest body;
    if (body.ParseFromString(request.message.body)) {
      for (std::string& h : *body.mutable_graph_handles()) {
        if (h.empty()) h = handle;
      }
      request.message.body = body.SerializeAsString();
    }
  }
}

}  // namespace
}  // namespace rill::fuzz

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rill::fuzz::Initialize(size_t{1} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  std::vector<fuzz::ServiceRequest> requests = fuzz::DecodeRequests(fuzz::AsView(data, size));
  if (requests.empty()) return 0;
  std::unique_ptr<Worker> worker = fuzz::NewWorker();
  // No peers: a RegisterGraph that names some teaches them to this cache.
  ChannelCache channels{ClusterSpec()};
  WorkerService service(worker.get(), &channels);
  const std::vector<RpcMethod> methods = service.Methods();
  std::string handle;
  struct Running {
    uint64_t step_id;
    std::shared_ptr<fuzz::ServiceCall> call;
  };
  std::vector<Running> steps;
  for (fuzz::ServiceRequest& request : requests) {
    fuzz::FillHandle(request, handle);
    uint64_t step_id = 0;
    if (request.method == "RunGraph") {
      RunGraphRequest body;
      if (body.ParseFromString(request.message.body)) step_id = body.step_id();
    }
    const std::string method = request.method;
    std::shared_ptr<fuzz::ServiceCall> call = fuzz::StartCall(methods, std::move(request));
    if (call == nullptr) continue;
    if (method == "RunGraph") {
      // Later requests may feed it (PushTensor) or abort it.
      steps.push_back({step_id, std::move(call)});
      continue;
    }
    // The others answer before they return.
    fuzz::Check(call->done.HasBeenNotified(), "a worker method returned without answering");
    RegisterGraphReply reply;
    if (method == "RegisterGraph" && call->status.ok() && reply.ParseFromString(call->reply.body)) {
      handle = reply.graph_handle();
    }
  }
  const absl::Time deadline = absl::Now() + fuzz::kStepTime;
  for (Running& step : steps) {
    if (step.call->done.WaitForNotificationWithDeadline(deadline)) continue;
    worker->AbortStep(step.step_id, absl::DeadlineExceededError("the fuzz step took too long"));
  }
  for (Running& step : steps) {
    fuzz::Check(step.call->WaitFor(fuzz::kAbortTime), "a step did not end after AbortStep");
    for (const Tensor& fetched : step.call->reply.tensors) (void)fuzz::TouchElements(fetched);
  }
  return 0;
}
