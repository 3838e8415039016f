// One test body per behaviour, run twice: on a local session and on an
// in-process cluster of 1 ps + 2 workers (the session on worker 0's
// master). Locally, three CPU devices stand in for the three tasks.
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "tests/runtime/test_kernels.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::Failing;
using ::rill::testing::FloatConst;
using ::rill::testing::IsOkAndHolds;
using ::rill::testing::QuietLog;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

// Blocks its thread until the step is cancelled (it registers a callback,
// as a blocking queue or accumulator kernel does), then records the status
// it was cancelled with. Gives up after a minute so that a broken
// cancellation fails the test instead of hanging it.
struct Blocked {
  absl::Mutex mu;
  int running ABSL_GUARDED_BY(mu) = 0;
  std::vector<absl::StatusCode> cancelled_with ABSL_GUARDED_BY(mu);
};
Blocked blocked;

class WaitsForCancellation final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    {
      absl::MutexLock lock(&blocked.mu);
      ++blocked.running;
    }
    absl::Notification cancelled;
    absl::Status status;
    StepCancellation::Token token;
    if (ctx.cancellation()->RegisterCallback(
            [&](const absl::Status& s) {
              status = s;
              cancelled.Notify();
            },
            &token)) {
      if (!cancelled.WaitForNotificationWithTimeout(absl::Minutes(1))) {
        ctx.cancellation()->DeregisterCallback(token);
        status = absl::InternalError("never cancelled");
      }
    } else {
      status = ctx.cancellation()->status();
    }
    absl::MutexLock lock(&blocked.mu);
    --blocked.running;
    blocked.cancelled_with.push_back(status.code());
    return absl::CancelledError("stopped waiting");
  }
};

// Rsqrt blocks until cancelled; Sign fails.
const KernelRegistry& TestKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    r->Register(KernelDef("Rsqrt"), MakeKernel<WaitsForCancellation>);
    r->Register(KernelDef("Sign"), MakeKernel<Failing>);
    RegisterStandardKernels(*r);
    return r;
  }();
  return *registry;
}

enum class Mode { kLocal, kCluster };

// Enough threads per task for every blocking kernel at once.
constexpr int kInterOpThreads = 4;

class SessionModes : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    {
      absl::MutexLock lock(&blocked.mu);
      blocked.running = 0;
      blocked.cancelled_with.clear();
    }
    if (GetParam() == Mode::kLocal) return;
    ServerOptions options;
    options.log = QuietLog();
    options.kernel_registry = &TestKernels();
    options.inter_op_threads = kInterOpThreads;
    ASSERT_OK_AND_ASSIGN(servers_, Server::CreateLocalCluster({{"worker", 2}, {"ps", 1}}, options));
  }

  // Where "ps", "worker0" and "worker1" are.
  std::string Role(const std::string& role) const {
    const bool local = GetParam() == Mode::kLocal;
    if (role == "ps") return local ? "/device:CPU:1" : "/job:ps/task:0";
    if (role == "worker0") return local ? "/device:CPU:0" : "/job:worker/task:0";
    return local ? "/device:CPU:2" : "/job:worker/task:1";
  }
  // The full name of the role's (first) device.
  std::string Device(const std::string& role) const {
    if (GetParam() == Mode::kLocal) {
      return "/job:localhost/replica:0/task:0" + Role(role);
    }
    return absl::StrFormat("%s/device:CPU:0", role == "ps"        ? "/job:ps/replica:0/task:0"
                                              : role == "worker0" ? "/job:worker/replica:0/task:0"
                                                                  : "/job:worker/replica:0/task:1");
  }

  std::unique_ptr<Session> NewTestSession(const GraphDef& graph) {
    SessionOptions options;
    options.kernel_registry = &TestKernels();
    options.inter_op_threads = kInterOpThreads;
    if (GetParam() == Mode::kLocal) {
      options.device_count["CPU"] = 3;
    } else {
      options.target = servers_[0]->target();
    }
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
    EXPECT_OK(session);
    return session.ok() ? *std::move(session) : nullptr;
  }

  std::unique_ptr<Session> NewTestSession(const Scope& scope) {
    absl::StatusOr<GraphDef> graph = scope.ToGraphDef();
    EXPECT_OK(graph);
    return NewTestSession(graph.ok() ? *graph : GraphDef());
  }

  std::vector<std::unique_ptr<Server>> servers_;
};

TEST_P(SessionModes, AbortCancelsBlockedKernelsAndReceivesOnOtherTasks) {
  const Scope root = ops::NewRootScope();
  // The ps blocks; worker 1 waits to receive what the ps never sends;
  // worker 0 fails.
  const Output stuck =
      ops::Rsqrt(root.WithDevice(Role("ps")).WithOpName("stuck"), FloatConst(root, {4}, {1}));
  ops::Identity(root.WithDevice(Role("worker1")).WithOpName("waiting"), stuck);
  ops::Sign(root.WithDevice(Role("worker0")).WithOpName("fails"), FloatConst(root, {1}, {1}));
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(session->Run({}, {"waiting"}, {"fails"}),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("node 'fails' (Sign)"), HasSubstr("the disk is on fire"))));
  // Run returned: every task's part has finished, the blocked kernel's
  // thread included.
  absl::MutexLock lock(&blocked.mu);
  EXPECT_EQ(blocked.running, 0);
  EXPECT_THAT(blocked.cancelled_with, Each(absl::StatusCode::kDataLoss));
}

TEST_P(SessionModes, DeadlineFailsTheStepOnEveryTask) {
  const Scope root = ops::NewRootScope();
  std::vector<Output> parts;
  for (const char* role : {"ps", "worker0", "worker1"}) {
    parts.push_back(ops::Rsqrt(root.WithDevice(Role(role)).WithOpName(std::string("wait_") + role),
                               FloatConst(root.WithDevice(Role(role)), {4}, {1})));
  }
  ops::AddN(root.WithOpName("sum"), parts);
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.timeout_in_ms = 500;
  EXPECT_THAT(session->Run(options, {}, {"sum"}, {}, nullptr),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("timeout_in_ms")));
  absl::MutexLock lock(&blocked.mu);
  EXPECT_EQ(blocked.running, 0);
  // Each task's kernel was stopped by the deadline itself.
  EXPECT_THAT(blocked.cancelled_with,
              ElementsAre(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kDeadlineExceeded,
                          absl::StatusCode::kDeadlineExceeded));
}

// Close may come while steps run (a queue runner's thread waits in one):
// it cancels them on every task and returns once they have ended.
TEST_P(SessionModes, CloseCancelsTheStepsThatRun) {
  const Scope root = ops::NewRootScope();
  std::vector<Output> parts;
  for (const char* role : {"ps", "worker0"}) {
    parts.push_back(ops::Rsqrt(root.WithDevice(Role(role)).WithOpName(std::string("wait_") + role),
                               FloatConst(root.WithDevice(Role(role)), {4}, {1})));
  }
  ops::AddN(root.WithOpName("sum"), parts);
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  absl::Status waited;
  std::thread step([&] { waited = session->Run({}, {"sum"}).status(); });
  while (true) {
    absl::SleepFor(absl::Milliseconds(10));
    absl::MutexLock lock(&blocked.mu);
    if (blocked.running == 2) break;
  }
  ASSERT_OK(session->Close());
  step.join();
  EXPECT_THAT(waited, StatusIs(absl::StatusCode::kCancelled, HasSubstr("closed")));
  absl::MutexLock lock(&blocked.mu);
  EXPECT_EQ(blocked.running, 0);
  EXPECT_THAT(blocked.cancelled_with,
              ElementsAre(absl::StatusCode::kCancelled, absl::StatusCode::kCancelled));
  EXPECT_THAT(session->Run({}, {"sum"}).status(),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("closed")));
}

TEST_P(SessionModes, StepStatsComeFromEveryTaskAndDevice) {
  const Scope root = ops::NewRootScope();
  const Output a = FloatConst(root.WithDevice(Role("ps")).WithOpName("a"), {1, 2}, {2});
  const Output b = ops::Neg(root.WithDevice(Role("worker1")).WithOpName("b"), a);
  ops::Add(root.WithDevice(Role("worker0")).WithOpName("c"), a, b);
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.trace = true;
  RunMetadata metadata;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run(options, {}, {"c"}, {}, &metadata));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(0, 0));
  std::vector<std::string> devices;
  std::vector<std::string> nodes;
  for (const NodeExecStats& stats : metadata.step_stats) {
    devices.push_back(stats.device);
    nodes.push_back(stats.node_name);
    EXPECT_LE(stats.start_micros, stats.end_micros);
  }
  EXPECT_THAT(devices, AllOf(Contains(Device("ps")), Contains(Device("worker0")),
                             Contains(Device("worker1"))));
  EXPECT_THAT(nodes, AllOf(Contains("a"), Contains("b"), Contains("c")));
  // Without trace, nothing is collected.
  RunMetadata untraced;
  ASSERT_OK(session->Run(RunOptions(), {}, {"c"}, {}, &untraced).status());
  EXPECT_THAT(untraced.step_stats, SizeIs(0));
}

// The graph is placed once. A queue that is colocated (`_class`) with a
// node only some steps run, and asks for no device itself (as a graph
// from a device setter may have it), keeps one device in every step, so
// the steps share it. Placed per step, it sat on the ps in the steps that
// ran that node and on the default device in the others: two queues.
TEST_P(SessionModes, AStatefulNodeKeepsOneDeviceAcrossSteps) {
  const Scope root = ops::NewRootScope();
  const ops::NoOp anchor(root.WithDevice(Role("ps")).WithOpName("anchor"));
  const ops::FIFOQueueV2 queue(root.ColocateWith(anchor.operation).WithOpName("queue"), {DT_FLOAT});
  ops::QueueEnqueueV2(root.WithOpName("enqueue"), queue, {FloatConst(root, {1}, {1})});
  ops::QueueSizeV2(root.WithOpName("size"), queue);
  ASSERT_OK_AND_ASSIGN(GraphDef graph, root.ToGraphDef());
  for (NodeDef& node : *graph.mutable_node()) {
    if (node.name() == "queue") node.clear_device();
  }
  std::unique_ptr<Session> session = NewTestSession(graph);
  ASSERT_NE(session, nullptr);
  RunOptions traced;
  traced.trace = true;
  std::vector<std::string> queue_devices;
  std::map<std::string, std::set<std::string>> devices_by_node;
  const auto run = [&](const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets) -> std::vector<Tensor> {
    RunMetadata metadata;
    absl::StatusOr<std::vector<Tensor>> out = session->Run(traced, {}, fetches, targets, &metadata);
    EXPECT_OK(out);
    for (const NodeExecStats& stats : metadata.step_stats) {
      if (stats.node_name == "queue") queue_devices.push_back(stats.device);
      devices_by_node[stats.node_name].insert(stats.device);
    }
    return out.ok() ? *std::move(out) : std::vector<Tensor>();
  };
  run({}, {"enqueue"});
  std::vector<Tensor> size = run({"size"}, {"anchor"});
  ASSERT_EQ(size.size(), 1u);
  EXPECT_EQ(size[0].data<int32_t>()[0], 1);
  size = run({"size"}, {});
  ASSERT_EQ(size.size(), 1u);
  EXPECT_EQ(size[0].data<int32_t>()[0], 1);
  EXPECT_THAT(queue_devices, AllOf(SizeIs(3), Each(Device("ps"))));
  for (const auto& [node, devices] : devices_by_node) EXPECT_THAT(devices, SizeIs(1)) << node;
}

TEST_P(SessionModes, FeedErrorsNameTheCallersTensor) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithDevice(Role("worker1")).WithOpName("x"), DT_FLOAT,
                                    ops::Placeholder::Shape(PartialTensorShape({2})));
  ops::Neg(root.WithDevice(Role("ps")).WithOpName("y"), x);
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(session->Run({{"x", Tensor::FromVector<int32_t>({1, 2}, TensorShape({2}))}}, {"y"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'x:0'"), HasSubstr("int32"), Not(HasSubstr("_feed")))));
  EXPECT_THAT(
      session->Run({{"x:0", Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}))}}, {"y"}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'x:0'"), HasSubstr("[3]"), Not(HasSubstr("_feed")))));
  EXPECT_THAT(session->Run({{"x", Tensor::FromVector<float>({1, 2}, TensorShape({2}))}}, {"y"}),
              IsOkAndHolds(ElementsAre(::testing::_)));
}

TEST_P(SessionModes, ExtendKeepsTheGraphsVersions) {
  // With a producer this recent, a Placeholder's shape [] means a scalar;
  // without versions it would read as unknown.
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithDevice(Role("worker1")).WithOpName("x"), DT_FLOAT,
                                    ops::Placeholder::Shape(PartialTensorShape({})));
  ops::Neg(root.WithDevice(Role("ps")).WithOpName("y"), x);
  ASSERT_OK_AND_ASSIGN(GraphDef graph, root.ToGraphDef());
  graph.mutable_versions()->set_producer(27);
  std::unique_ptr<Session> session = NewTestSession(GraphDef());
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Extend(graph));
  EXPECT_THAT(session->Run({{"x", Tensor::FromVector<float>({1, 2}, TensorShape({2}))}}, {"y"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape []")));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       session->Run({{"x", Tensor::Scalar<float>(3)}}, {"y"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(-3));
}

TEST_P(SessionModes, FetchesAVariableAndAResourceRead) {
  const Scope root = ops::NewRootScope();
  const Scope ps = root.WithDevice(Role("ps"));
  const Variable w(ps, "w", Tensor::FromVector<float>({1, 2}, TensorShape({2})));
  ops::VarHandleOp handle(ps.WithOpName("rv"), DT_FLOAT, PartialTensorShape({2}),
                          ops::VarHandleOp::SharedName("rv"));
  ops::AssignVariableOp(ps.WithOpName("assign_rv"), handle,
                        Tensor::FromVector<float>({5, 6}, TensorShape({2})));
  ops::ReadVariableOp read(ps.WithOpName("read_rv"), handle, DT_FLOAT);
  ops::Neg(root.WithDevice(Role("worker1")).WithOpName("neg_rv"), read);
  GlobalVariablesInitializer(root);
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init", "assign_rv"}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"w", "read_rv", "neg_rv"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(5, 6));
  EXPECT_THAT(Values<float>(out[2]), ElementsAre(-5, -6));
}

TEST_P(SessionModes, UninitializedVariableErrorLeadsWithTheVariable) {
  const Scope root = ops::NewRootScope();
  const Variable w(root.WithDevice(Role("ps")), "w",
                   Tensor::FromVector<float>({1, 2}, TensorShape({2})));
  ops::Neg(root.WithDevice(Role("worker1")).WithOpName("y"), w);
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  absl::StatusOr<std::vector<Tensor>> out = session->Run({}, {"y"});
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kFailedPrecondition,
                            HasSubstr("Attempting to use uninitialized value w")));
  EXPECT_TRUE(absl::StartsWith(out.status().message(), "Attempting to use uninitialized value w"))
      << out.status();
}

TEST_P(SessionModes, ConcurrentRunsFromSeveralThreads) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithDevice(Role("worker0")).WithOpName("x"), DT_FLOAT);
  const Output scaled = ops::Mul(root.WithDevice(Role("ps")).WithOpName("scaled"), x,
                                 FloatConst(root.WithDevice(Role("ps")), {3}, {}));
  ops::Add(root.WithDevice(Role("worker1")).WithOpName("y"), scaled,
           FloatConst(root.WithDevice(Role("worker1")), {1}, {}));
  std::unique_ptr<Session> session = NewTestSession(root);
  ASSERT_NE(session, nullptr);
  constexpr int kThreads = 4;
  constexpr int kRuns = 40;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRuns; ++i) {
        const float value = static_cast<float>(t * 1000 + i);
        absl::StatusOr<std::vector<Tensor>> out =
            session->Run({{"x", Tensor::Scalar<float>(value)}}, {"y"});
        if (!out.ok() || (*out)[0].data<float>()[0] != 3 * value + 1) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, SessionModes, ::testing::Values(Mode::kLocal, Mode::kCluster),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return info.param == Mode::kLocal ? "Local" : "Cluster";
                         });

}  // namespace
}  // namespace rill
