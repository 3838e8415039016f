// RPC requests to a master, as its server decodes and serves them: the
// MasterService methods (CreateSession, ExtendSession, RunStep,
// CloseSession, ListDevices) of a one-task cluster whose worker has two
// CPUs, called in order, each answered before the next starts (a step
// that waits longer than kStepTime is left running). A request whose
// session handle is empty gets the one the last CreateSession returned
// (a client learns it from the reply; the fuzzer cannot guess it).
// Sessions still open at the end are closed, which cancels their steps.
// Invariants: every call is answered exactly once; closing a session ends
// its steps.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/distributed/channel_cache.h"
#include "runtime/distributed/master_service.h"
#include "runtime/session/worker.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/service_calls.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill::fuzz {
namespace {

constexpr absl::Duration kStepTime = absl::Seconds(1);
constexpr absl::Duration kCallTime = absl::Seconds(20);
constexpr char kTask[] = "/job:worker/replica:0/task:0";

std::unique_ptr<Worker> NewWorker() {
  WorkerOptions options;
  options.task = kTask;
  options.device_count = {{"CPU", 2}};
  options.inter_op_threads = 2;
  options.intra_op_threads = 1;
  absl::StatusOr<std::unique_ptr<Worker>> worker = Worker::Create(options);
  Check(worker.ok(), "cannot create a worker");
  return *std::move(worker);
}

// Fills an empty session handle with `handle`.
template <typename Proto>
void FillHandle(RpcMessage& message, const std::string& handle) {
  Proto body;
  if (body.ParseFromString(message.body) && body.session_handle().empty()) {
    body.set_session_handle(handle);
    message.body = body.SerializeAsString();
  }
}

void FillHandle(ServiceRequest& request, const std::string& handle) {
  if (request.method == "ExtendSession") FillHandle<ExtendSessionRequest>(request.message, handle);
  if (request.method == "RunStep") FillHandle<RunStepRequest>(request.message, handle);
  if (request.method == "CloseSession") FillHandle<CloseSessionRequest>(request.message, handle);
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
  // Session start-up lines and placement logs are not wanted here.
  std::unique_ptr<Worker> worker = fuzz::NewWorker();
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::FromJobs({{"worker", {"127.0.0.1:1"}}});
  fuzz::Check(cluster.ok(), "bad cluster");
  ChannelCache channels(*cluster);
  std::vector<std::string> handles;
  std::vector<std::shared_ptr<fuzz::ServiceCall>> calls;
  {
    MasterServiceOptions options;
    options.task = TaskId{"worker", 0};
    options.local_worker = worker.get();
    options.channels = &channels;
    options.log = LogSink::Discard();
    MasterService service(options);
    const std::vector<RpcMethod> methods = service.Methods();
    for (fuzz::ServiceRequest& request : requests) {
      fuzz::FillHandle(request, handles.empty() ? "" : handles.back());
      const std::string method = request.method;
      std::shared_ptr<fuzz::ServiceCall> call = fuzz::StartCall(methods, std::move(request));
      if (call == nullptr) continue;
      calls.push_back(call);
      if (method == "RunStep") {
        if (!call->WaitFor(fuzz::kStepTime)) continue;
        for (const Tensor& fetched : call->reply.tensors) (void)fuzz::TouchElements(fetched);
      }
      fuzz::Check(call->WaitFor(fuzz::kCallTime), "a master method did not answer");
      CreateSessionReply created;
      if (method == "CreateSession" && call->status.ok() &&
          created.ParseFromString(call->reply.body)) {
        handles.push_back(created.session_handle());
      }
    }
    // As clients that go away: their steps are cancelled.
    for (const std::string& handle : handles) {
      CloseSessionRequest close;
      close.set_session_handle(handle);
      std::shared_ptr<fuzz::ServiceCall> call = fuzz::StartCall(
          methods, fuzz::ServiceRequest{"CloseSession", RpcMessage{close.SerializeAsString(), {}}});
      fuzz::Check(call != nullptr && call->WaitFor(fuzz::kCallTime), "CloseSession did not answer");
    }
    for (const auto& call : calls) {
      fuzz::Check(call->WaitFor(fuzz::kCallTime), "a step did not end when its session closed");
    }
  }
  return 0;
}
