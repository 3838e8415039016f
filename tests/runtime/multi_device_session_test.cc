// Sessions over several local CPU devices: a graph placed on /cpu:0 and
// /cpu:1 runs partitioned (with _Send/_Recv) and gives exactly the numbers
// that the same graph gives on one device.
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/runtime/test_kernels.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::LineXs;
using ::rill::testing::LineYs;
using ::rill::testing::RandomTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Builds the same graph either spread over the devices it names, or with
// every device request dropped (the single-device reference).
using GraphFn = std::function<void(const Scope& root, const std::function<Scope(int)>& on)>;

GraphDef Build(const GraphFn& build, bool spread) {
  const Scope root = ops::NewRootScope();
  build(root,
        [&](int cpu) { return spread ? root.WithDevice(absl::StrFormat("/cpu:%d", cpu)) : root; });
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

std::unique_ptr<Session> NewTwoCpuSession(const GraphDef& graph, SessionOptions options = {}) {
  options.device_count["CPU"] = 2;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

// A^3 + B^3 with the powers on different devices and the sum on the first:
// the seed's two-device matmul example.
void MatrixPowers(const Scope& root, const std::function<Scope(int)>& on) {
  const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  const Output b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  Output pa = a;
  Output pb = b;
  for (int i = 0; i < 2; ++i) {
    pa = ops::MatMul(on(0).WithOpName(absl::StrFormat("pa%d", i)), pa, a);
    pb = ops::MatMul(on(1).WithOpName(absl::StrFormat("pb%d", i)), pb, b);
  }
  const Output sum = ops::Add(on(0).WithOpName("sum"), pa, pb);
  ops::Sum(on(1).WithOpName("total"), ops::Square(on(1), sum),
           ops::Const(root, Tensor::FromVector<int32_t>({0, 1}, TensorShape({2})), DT_INT32));
}

TEST(MultiDeviceSession, PartitionedMatmulsEqualOneDevice) {
  const Tensor a = RandomTensor(TensorShape({64, 64}), 1);
  const Tensor b = RandomTensor(TensorShape({64, 64}), 2);
  auto one = NewTwoCpuSession(Build(MatrixPowers, false));
  auto two = NewTwoCpuSession(Build(MatrixPowers, true));
  ASSERT_OK_AND_ASSIGN(auto expected, one->Run({{"a", a}, {"b", b}}, {"sum", "total", "pb1"}));
  ASSERT_OK_AND_ASSIGN(auto got, two->Run({{"a", a}, {"b", b}}, {"sum", "total", "pb1"}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].shape(), expected[i].shape());
    EXPECT_EQ(Values<float>(got[i]), Values<float>(expected[i])) << "fetch " << i;
  }
}

TEST(MultiDeviceSession, TraceShowsBothDevicesAndTheTransfers) {
  auto session = NewTwoCpuSession(Build(MatrixPowers, true));
  RunOptions options;
  options.trace = true;
  RunMetadata metadata;
  const Tensor a = RandomTensor(TensorShape({4, 4}), 1);
  ASSERT_OK(session->Run(options, {{"a", a}, {"b", a}}, {"total"}, {}, &metadata).status());
  std::set<std::string> devices;
  std::set<std::string> ops;
  for (const NodeExecStats& node : metadata.step_stats) {
    devices.insert(node.device);
    ops.insert(node.op);
  }
  EXPECT_THAT(devices, ElementsAre("/job:localhost/replica:0/task:0/device:CPU:0",
                                   "/job:localhost/replica:0/task:0/device:CPU:1"));
  EXPECT_THAT(ops, AllOf(Contains("_Send"), Contains("_Recv")));
}

// Linear regression with its variables on /cpu:1 and the gradient
// computation on /cpu:0: every step moves w and b across and the updates
// back; after many steps the values match the single-device run exactly.
void Regression(const Scope& root, const std::function<Scope(int)>& on) {
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
  Variable w(on(1), "w", Tensor::FromVector<float>({0.5f}, TensorShape({1})));
  Variable b(on(1), "b", Tensor::FromVector<float>({0.0f}, TensorShape({1})));
  const Scope worker = on(0);
  const Output prediction = ops::Add(worker, ops::Mul(worker, x, w), b);
  const Output loss =
      ops::Mean(worker.WithOpName("loss"), ops::Square(worker, ops::Sub(worker, prediction, y)), 0);
  GradientDescentOptimizer optimizer(0.05);
  ASSERT_OK(optimizer.Minimize(worker, loss, {w, b}, nullptr, "train").status());
  GlobalVariablesInitializer(root);
}

std::vector<float> Train(Session& session, int steps) {
  EXPECT_OK(session.Run({}, {}, {"init"}).status());
  const Tensor x = LineXs();
  const Tensor y = LineYs();
  for (int step = 0; step < steps; ++step) {
    EXPECT_OK(session.Run({{"x", x}, {"y", y}}, {}, {"train"}).status());
  }
  absl::StatusOr<std::vector<Tensor>> out = session.Run({}, {"w/read", "b/read"});
  EXPECT_OK(out);
  if (!out.ok()) return {};
  return {(*out)[0].data<float>()[0], (*out)[1].data<float>()[0]};
}

TEST(MultiDeviceSession, TrainingWithVariablesOnAnotherDeviceEqualsOneDevice) {
  auto one = NewTwoCpuSession(Build(Regression, false));
  auto two = NewTwoCpuSession(Build(Regression, true));
  const std::vector<float> expected = Train(*one, 300);
  const std::vector<float> got = Train(*two, 300);
  EXPECT_EQ(got, expected);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], 2, 1e-2);
  EXPECT_NEAR(got[1], 10, 1e-1);
}

// The placement log names every node's device and then sums up per device.
TEST(MultiDeviceSession, PlacementLogCountsTransfersPerDevice) {
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  SessionOptions options;
  options.log_device_placement = true;
  FileLogSink sink(log);
  options.log = &sink;
  const GraphFn build = [](const Scope&, const std::function<Scope(int)>& on) {
    const Output a = testing::FloatConst(on(0).WithOpName("a"), {3}, TensorShape({}));
    ops::Neg(on(1).WithOpName("n"), a);
    ops::Square(on(1).WithOpName("s"), a);
  };
  auto session = NewTwoCpuSession(Build(build, true), options);
  ASSERT_OK_AND_ASSIGN(auto out, session->Run({}, {"n", "s"}));
  EXPECT_EQ(out[0].data<float>()[0], -3);
  EXPECT_EQ(out[1].data<float>()[0], 9);
  std::rewind(log);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  std::fclose(log);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  // One send for both consumers of `a` on CPU:1 (the partitioner shares it).
  EXPECT_THAT(lines, AllOf(Contains("a: (Const): /job:localhost/replica:0/task:0/device:CPU:0"),
                           Contains("n: (Neg): /job:localhost/replica:0/task:0/device:CPU:1"),
                           Contains("s: (Square): /job:localhost/replica:0/task:0/device:CPU:1"),
                           Contains(HasSubstr("device:CPU:0: 1 node, 0 B of variables, 1 send, "
                                              "0 recv")),
                           Contains(HasSubstr("device:CPU:1: 2 nodes, 0 B of variables, 0 send, "
                                              "1 recv"))));
}

// A kernel error in one partition ends the step everywhere (the other
// partition is waiting for its tensor) and names the failing node; the
// session stays usable.
TEST(MultiDeviceSession, ErrorInOnePartitionFailsTheWholeStep) {
  auto session = NewTwoCpuSession(Build(MatrixPowers, true));
  const Tensor square = RandomTensor(TensorShape({3, 3}), 1);
  const Tensor wide = RandomTensor(TensorShape({2, 3}), 2);
  EXPECT_THAT(session->Run({{"a", square}, {"b", wide}}, {"total"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pb0")));
  EXPECT_OK(session->Run({{"a", square}, {"b", square}}, {"total"}).status());
}

TEST(MultiDeviceSession, ConcurrentStepsKeepTheirTensorsApart) {
  auto one = NewTwoCpuSession(Build(MatrixPowers, false));
  auto two = NewTwoCpuSession(Build(MatrixPowers, true));
  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::vector<float>> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(
        {RandomTensor(TensorShape({8, 8}), 2 * t), RandomTensor(TensorShape({8, 8}), 2 * t + 1)});
    ASSERT_OK_AND_ASSIGN(auto out, one->Run({{"a", inputs[t][0]}, {"b", inputs[t][1]}}, {"sum"}));
    expected.push_back(Values<float>(out[0]));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto out = two->Run({{"a", inputs[t][0]}, {"b", inputs[t][1]}}, {"sum"});
        if (!out.ok() || Values<float>((*out)[0]) != expected[t]) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

const KernelRegistry& SlowSqrtKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    r->Register(KernelDef("Sqrt"), MakeKernel<testing::UntilCancelled>);
    RegisterStandardKernels(*r);
    return r;
  }();
  return *registry;
}

TEST(MultiDeviceSession, TimeoutCancelsEveryPartition) {
  // The slow kernel (waits for cancellation) sits on /cpu:1 while /cpu:0
  // waits for its output.
  const Scope root = ops::NewRootScope();
  const Output slow = ops::Sqrt(root.WithOpName("slow").WithDevice("/cpu:1"),
                                testing::FloatConst(root, {4}, TensorShape({})));
  ops::Neg(root.WithOpName("n").WithDevice("/cpu:0"), slow);
  SessionOptions options;
  options.kernel_registry = &SlowSqrtKernels();
  auto session = NewTwoCpuSession(*root.ToGraphDef(), options);
  RunOptions run;
  run.timeout_in_ms = 20;
  EXPECT_THAT(session->Run(run, {}, {"n"}, {}, nullptr),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("20 ms")));
}

TEST(MultiDeviceSession, SecondDeviceNeedsDeviceCountOrSoftPlacement) {
  const GraphDef graph = Build(MatrixPowers, true);
  const Tensor a = RandomTensor(TensorShape({2, 2}), 1);
  ASSERT_OK_AND_ASSIGN(auto single, NewSession(SessionOptions(), graph));
  EXPECT_THAT(
      single->Run({{"a", a}, {"b", a}}, {"sum"}),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("pb0"), HasSubstr("CPU:1"))));
  SessionOptions soft;
  soft.allow_soft_placement = true;
  ASSERT_OK_AND_ASSIGN(auto fallback, NewSession(soft, graph));
  EXPECT_OK(fallback->Run({{"a", a}, {"b", a}}, {"sum"}).status());
}

TEST(MultiDeviceSession, RejectsBadDeviceCounts) {
  SessionOptions negative;
  negative.device_count["CPU"] = -1;
  EXPECT_THAT(NewSession(negative), StatusIs(absl::StatusCode::kInvalidArgument,
                                             AllOf(HasSubstr("device_count"), HasSubstr("-1"))));
  SessionOptions unknown;
  unknown.device_count["TPU"] = 1;
  EXPECT_THAT(NewSession(unknown), StatusIs(absl::StatusCode::kInvalidArgument,
                                            AllOf(HasSubstr("device_count"), HasSubstr("TPU"))));
}

}  // namespace
}  // namespace rill
