#include "runtime/session/worker.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/framework/device_context.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "placement/device_set.h"
#include "runtime/session/partition_plan.h"
#include "runtime/session/run_signature.h"
#include "tests/runtime/test_kernels.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::FloatConst;
using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kTask[] = "/job:worker/replica:0/task:0";

std::unique_ptr<Worker> TwoCpuWorker(PushTensorFn push = nullptr) {
  WorkerOptions options;
  options.task = kTask;
  options.device_count = {{"CPU", 2}};
  options.inter_op_threads = 2;
  options.intra_op_threads = 1;
  options.push = std::move(push);
  absl::StatusOr<std::unique_ptr<Worker>> worker = Worker::Create(options);
  EXPECT_OK(worker);
  return worker.ok() ? *std::move(worker) : nullptr;
}

// The registration a session core would make for `scope`'s graph run
// with these names, placed over `devices`.
absl::StatusOr<RegisterGraphRequest> Registration(const Scope& scope,
                                                  const std::vector<std::string>& feeds,
                                                  const std::vector<std::string>& fetches,
                                                  const std::vector<std::string>& devices) {
  ASSIGN_OR_RETURN(GraphDef def, scope.ToGraphDef());
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, ImportGraphDef(def, StandardOps()));
  ASSIGN_OR_RETURN(RunSignature sig, ResolveNames(*graph, feeds, fetches, {}));
  ASSIGN_OR_RETURN(DeviceSet device_set, DeviceSet::Create(devices));
  PartitionPlanParams params;
  params.graph = graph.get();
  ASSIGN_OR_RETURN(params.nodes, Prune(*graph, sig));
  params.feeds = sig.feeds;
  params.fetches = sig.fetches;
  params.device_set = &device_set;
  params.placer.default_device = devices[0];
  ASSIGN_OR_RETURN(PartitionPlan plan, MakePartitionPlan(params));
  RegisterGraphRequest request;
  for (auto& [device, partition] : plan.partitions) {
    (*request.mutable_partitions())[device] = partition;
    const PartitionIo& io = plan.io[device];
    for (const std::string& feed : io.feed_nodes) request.add_feeds(feed);
    for (const std::string& fetch : io.fetch_names) request.add_fetches(fetch);
  }
  return request;
}

// This task's part of y = Neg(x) where x is on the ps and y here (or, with
// `sends`, x here and y on the ps).
absl::StatusOr<RegisterGraphRequest> HalfOfATwoTaskGraph(bool sends = false) {
  const Scope root = ops::NewRootScope();
  const std::string here = std::string(kTask) + "/device:CPU:0";
  const std::string ps = "/job:ps/replica:0/task:0/device:CPU:0";
  const Output x = FloatConst(root.WithDevice(sends ? here : ps).WithOpName("x"), {1}, {1});
  ops::Neg(root.WithDevice(sends ? ps : here).WithOpName("y"), x);
  ASSIGN_OR_RETURN(RegisterGraphRequest request, Registration(root, {}, {"y"}, {here, ps}));
  RegisterGraphRequest mine;
  (*mine.mutable_partitions())[here] = request.partitions().at(here);
  if (!sends) mine.add_fetches("y:0");
  return mine;
}

absl::StatusOr<std::string> Register(Worker& worker, const RegisterGraphRequest& request) {
  absl::StatusOr<std::string> handle;
  worker.RegisterGraph(request, absl::InfiniteFuture(),
                       [&](absl::StatusOr<GraphRegistration> registered) {
                         if (registered.ok()) {
                           handle = std::move(registered->handle);
                         } else {
                           handle = registered.status();
                         }
                       });
  return handle;
}

absl::Status RunGraph(Worker& worker, RunGraphCall* call) {
  absl::Notification done;
  absl::Status status;
  worker.RunGraph(call, [&](absl::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  return status;
}

std::vector<std::string> Cpus(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrFormat("%s/device:CPU:%d", kTask, i));
  return names;
}

TEST(Worker, ListsItsDevices) {
  std::unique_ptr<Worker> worker = TwoCpuWorker();
  ASSERT_NE(worker, nullptr);
  EXPECT_THAT(worker->device_names(), ElementsAre(Cpus(2)[0], Cpus(2)[1]));
  absl::StatusOr<std::vector<std::string>> listed;
  worker->ListDevices(absl::InfiniteFuture(),
                      [&](absl::StatusOr<std::vector<std::string>> d) { listed = std::move(d); });
  EXPECT_THAT(listed, IsOkAndHolds(ElementsAre(Cpus(2)[0], Cpus(2)[1])));
}

TEST(Worker, RunsAGraphCutOverItsDevicesThroughOneLocalRendezvous) {
  std::unique_ptr<Worker> worker = TwoCpuWorker();
  ASSERT_NE(worker, nullptr);
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithDevice("/device:CPU:1").WithOpName("x"), DT_FLOAT);
  const Output y = ops::Neg(root.WithDevice("/device:CPU:0").WithOpName("y"), x);
  ops::Mul(root.WithDevice("/device:CPU:1").WithOpName("z"), y, y);
  ASSERT_OK_AND_ASSIGN(RegisterGraphRequest request,
                       Registration(root, {"x"}, {"z", "y"}, Cpus(2)));
  ASSERT_EQ(request.partitions_size(), 2);
  ASSERT_OK_AND_ASSIGN(const std::string handle, Register(*worker, request));
  for (const Runner& runner : {Runner(RunHere), Runner(), Runner(RunQuickHere)}) {
    RunGraphCall call;
    call.graph_handle = handle;
    call.step_id = 1;
    call.runner = runner;
    call.trace = true;
    call.feeds = {Tensor::FromVector<float>({1, 2}, TensorShape({2}))};
    ASSERT_OK(RunGraph(*worker, &call));
    // The fetches come back in the registered order, whichever device
    // computed them.
    std::vector<std::string> order(request.fetches().begin(), request.fetches().end());
    ASSERT_EQ(call.fetched.size(), 2u);
    const int z = order[0] == "z:0" ? 0 : 1;
    EXPECT_THAT(Values<float>(call.fetched[z]), ElementsAre(1, 4));
    EXPECT_THAT(Values<float>(call.fetched[1 - z]), ElementsAre(-1, -2));
    EXPECT_FALSE(call.stats.empty());
  }
}

// A CPU whose memory counts as its own: copies to it negate floats and
// copies back negate them again, so that a value that skipped a copy shows;
// `fail` makes them fail.
class FakeDeviceMemory final : public DeviceContext {
 public:
  Allocator* host_allocator() override { return CpuAllocator(); }
  void CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) override {
    ++to_host;
    Copy(src, dst, std::move(done));
  }
  void CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) override {
    ++from_host;
    Copy(src, dst, std::move(done));
  }
  absl::Status CopyWithinDevice(const void*, void*, size_t) override {
    return absl::UnimplementedError("not used");
  }
  absl::Status CopyHostBytesToDevice(const void*, void*, size_t) override {
    return absl::UnimplementedError("not used");
  }

  std::atomic<int> to_host{0};
  std::atomic<int> from_host{0};
  bool fail = false;

 private:
  void Copy(const Tensor& src, Tensor* dst, CopyDone done) {
    if (fail) return done(absl::DataLossError("the copy engine failed"));
    if (InHostMemory(src.dtype())) {
      *dst = src;
    } else {
      Tensor copy = src.DeepCopy();
      for (int64_t i = 0; i < copy.NumElements(); ++i) copy.data<float>()[i] *= -1;
      *dst = std::move(copy);
    }
    // Later, on another thread, as a device's copies finish.
    std::thread([done = std::move(done)] { done(absl::OkStatus()); }).detach();
  }
};

class FakeDevice final : public Device {
 public:
  FakeDevice(std::string name, FakeDeviceMemory* memory)
      : Device(std::move(name), kDeviceCpu), cpu_(1), memory_(memory) {}
  Allocator* allocator() override { return cpu_.allocator(); }
  ResourceMgr* resource_manager() override { return cpu_.resource_manager(); }
  const Eigen::ThreadPoolDevice* eigen_cpu() const override { return cpu_.eigen_cpu(); }
  const Eigen::ThreadPoolDevice* eigen_cpu_serial() const override {
    return cpu_.eigen_cpu_serial();
  }
  DeviceContext* device_context() override { return memory_; }
  void CopyToHost(const Tensor& src, Tensor* dst, StatusCallback done) override {
    memory_->CopyToHost(src, dst, std::move(done));
  }
  void CopyFromHost(const Tensor& src, Tensor* dst, StatusCallback done) override {
    memory_->CopyFromHost(src, dst, std::move(done));
  }

 private:
  CpuDevice cpu_;
  FakeDeviceMemory* memory_;
};

TEST(Worker, ADeviceWithMemoryOfItsOwnGetsItsFeedsAndGivesItsFetchesThroughCopies) {
  FakeDeviceMemory memory;
  WorkerOptions options;
  options.task = kTask;
  options.inter_op_threads = 2;
  options.make_devices = [&]() -> absl::StatusOr<std::vector<std::unique_ptr<Device>>> {
    std::vector<std::unique_ptr<Device>> devices;
    devices.push_back(std::make_unique<FakeDevice>(Cpus(1)[0], &memory));
    return devices;
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Worker> worker, Worker::Create(options));
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const Output n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  ops::Mul(root.WithOpName("y"), x, x);
  ops::Identity(root.WithOpName("m"), n);
  ASSERT_OK_AND_ASSIGN(RegisterGraphRequest request,
                       Registration(root, {"x", "n"}, {"y", "m"}, Cpus(1)));
  ASSERT_OK_AND_ASSIGN(const std::string handle, Register(*worker, request));
  std::vector<std::string> fetch_order(request.fetches().begin(), request.fetches().end());
  const int y = fetch_order[0] == "y:0" ? 0 : 1;
  std::vector<std::string> feed_order(request.feeds().begin(), request.feeds().end());
  const bool x_first = feed_order[0] == "x";

  RunGraphCall call;
  call.graph_handle = handle;
  call.step_id = 1;
  const Tensor x_value = Tensor::FromVector<float>({1, 2}, TensorShape({2}));
  const Tensor n_value = Tensor::FromVector<int32_t>({7}, TensorShape({1}));
  call.feeds =
      x_first ? std::vector<Tensor>{x_value, n_value} : std::vector<Tensor>{n_value, x_value};
  ASSERT_OK(RunGraph(*worker, &call));
  // (-x)^2 computed "on the device", negated on the way back: a fetch that
  // skipped its copy would read 1, 4.
  EXPECT_THAT(Values<float>(call.fetched[y]), ElementsAre(-1, -4));
  EXPECT_THAT(Values<int32_t>(call.fetched[1 - y]), ElementsAre(7));
  EXPECT_EQ(memory.from_host.load(), 2);
  EXPECT_EQ(memory.to_host.load(), 2);

  memory.fail = true;
  RunGraphCall failing;
  failing.graph_handle = handle;
  failing.step_id = 2;
  failing.feeds = call.feeds;
  EXPECT_THAT(RunGraph(*worker, &failing),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("copy engine failed")));
}

TEST(Worker, CancellingTheCallStopsWaitingReceives) {
  std::unique_ptr<Worker> worker = TwoCpuWorker();
  ASSERT_NE(worker, nullptr);
  // A receive from another task that never sends.
  ASSERT_OK_AND_ASSIGN(const RegisterGraphRequest mine, HalfOfATwoTaskGraph());
  ASSERT_OK_AND_ASSIGN(const std::string handle, Register(*worker, mine));
  RunGraphCall call;
  call.graph_handle = handle;
  call.step_id = 7;
  absl::Notification done;
  absl::Status status;
  worker->RunGraph(&call, [&](absl::Status s) {
    status = std::move(s);
    done.Notify();
  });
  EXPECT_FALSE(done.HasBeenNotified());
  call.cancellation.Cancel(absl::DeadlineExceededError("too slow"));
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("too slow")));
}

TEST(Worker, AbortStepReachesCallsMadeOverTheNetwork) {
  std::unique_ptr<Worker> worker = TwoCpuWorker();
  ASSERT_NE(worker, nullptr);
  ASSERT_OK_AND_ASSIGN(const RegisterGraphRequest mine, HalfOfATwoTaskGraph());
  ASSERT_OK_AND_ASSIGN(const std::string handle, Register(*worker, mine));
  RunGraphCall call;
  call.graph_handle = handle;
  call.step_id = 9;
  call.abortable_by_step_id = true;
  absl::Notification done;
  absl::Status status;
  worker->RunGraph(&call, [&](absl::Status s) {
    status = std::move(s);
    done.Notify();
  });
  worker->AbortStep(9, absl::UnavailableError("/job:ps/replica:0/task:0 died"));
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("died")));
  // The step is over here: a late start of it is refused.
  RunGraphCall late;
  late.graph_handle = handle;
  late.step_id = 9;
  EXPECT_THAT(RunGraph(*worker, &late),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("already ended")));
}

TEST(Worker, RegistrationErrorsNameWhatIsWrong) {
  std::unique_ptr<Worker> worker = TwoCpuWorker();
  ASSERT_NE(worker, nullptr);
  const Scope root = ops::NewRootScope();
  ops::Neg(root.WithOpName("y"), FloatConst(root, {1}, {1}));
  ASSERT_OK_AND_ASSIGN(RegisterGraphRequest request, Registration(root, {}, {"y"}, Cpus(1)));

  RegisterGraphRequest elsewhere;
  (*elsewhere.mutable_partitions())["/job:worker/replica:0/task:0/device:CPU:7"] =
      request.partitions().begin()->second;
  EXPECT_THAT(Register(*worker, elsewhere),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("no device '/job:worker/replica:0/task:0/device:CPU:7'"),
                             HasSubstr("CPU:1"))));

  RegisterGraphRequest misplaced = request;
  GraphDef& partition = misplaced.mutable_partitions()->begin()->second;
  partition.mutable_node(0)->set_device(Cpus(2)[1]);
  EXPECT_THAT(Register(*worker, misplaced),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is placed on")));

  RegisterGraphRequest unknown_fetch = request;
  unknown_fetch.add_fetches("nowhere:0");
  EXPECT_THAT(Register(*worker, unknown_fetch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nowhere:0'")));

  EXPECT_THAT(Register(*worker, RegisterGraphRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no partition")));

  RunGraphCall call;
  call.graph_handle = "no-such-graph";
  EXPECT_THAT(RunGraph(*worker, &call),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("no-such-graph")));
}

TEST(Worker, AGraphSendingElsewhereNeedsAWayToPush) {
  std::unique_ptr<Worker> worker = TwoCpuWorker();
  ASSERT_NE(worker, nullptr);
  ASSERT_OK_AND_ASSIGN(const RegisterGraphRequest mine, HalfOfATwoTaskGraph(/*sends=*/true));
  EXPECT_THAT(Register(*worker, mine),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("talks to no other task")));
}

}  // namespace
}  // namespace rill
