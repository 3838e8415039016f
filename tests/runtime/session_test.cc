#include "runtime/session.h"

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "runtime/device/device.h"
#include "tests/runtime/test_kernels.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::Failing;
using ::rill::testing::FloatConst;
using ::rill::testing::IsOkAndHolds;
using ::rill::testing::slow_saw_cancellation;
using ::rill::testing::StatusIs;
using ::rill::testing::UntilCancelled;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

std::unique_ptr<Session> MakeSession(const Scope& scope, SessionOptions options = {}) {
  absl::StatusOr<GraphDef> def = scope.ToGraphDef();
  EXPECT_OK(def);
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, *def);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

// Counts its runs and forwards its input (registered for Neg in the test
// registries below).
std::atomic<int> neg_runs{0};
class CountingForward final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    neg_runs.fetch_add(1, std::memory_order_relaxed);
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

const KernelRegistry& TestKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    // Registered first, so these win over the standard kernels.
    r->Register(KernelDef("Neg"), MakeKernel<CountingForward>);
    r->Register(KernelDef("NoOp"), MakeKernel<Failing>);
    r->Register(KernelDef("Sqrt"), MakeKernel<UntilCancelled>);
    RegisterStandardKernels(*r);
    return r;
  }();
  return *registry;
}

SessionOptions WithTestKernels() {
  SessionOptions options;
  options.kernel_registry = &TestKernels();
  return options;
}

TEST(Session, ComputesConstantExpression) {
  const Scope root = ops::NewRootScope();
  const Output a = FloatConst(root.WithOpName("a"), {1, 2, 3}, {3});
  const Output b = FloatConst(root.WithOpName("b"), {10, 20, 30}, {3});
  ops::Add(root.WithOpName("sum"), a, b);
  auto session = MakeSession(root);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"sum"}));
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(11, 22, 33));
}

TEST(Session, FeedsPlaceholdersOfMatMul) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 2}));
  const Output w = FloatConst(root.WithOpName("w"), {1, 2, 3, 4}, {2, 2});
  ops::MatMul(root.WithOpName("y"), x, w);
  auto session = MakeSession(root);
  const Tensor feed = Tensor::FromVector<float>({1, 1, 0, 2}, {2, 2});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({{"x", feed}}, {"y:0"}));
  EXPECT_EQ(out[0].shape(), TensorShape({2, 2}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(4, 6, 6, 8));
}

TEST(Session, FeedsOfEveryDtypeFlowThrough) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder i(root.WithOpName("i"), DT_INT64);
  const ops::Placeholder s(root.WithOpName("s"), DT_STRING);
  const ops::Placeholder b(root.WithOpName("b"), DT_BOOL);
  ops::Identity(root.WithOpName("i2"), i);
  ops::Identity(root.WithOpName("s2"), s);
  ops::Identity(root.WithOpName("b2"), b);
  auto session = MakeSession(root);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       session->Run({{"i", Tensor::Scalar<int64_t>(int64_t{1} << 40)},
                                     {"s", Tensor::Scalar<std::string>("hello")},
                                     {"b", Tensor::Scalar<bool>(true)}},
                                    {"i2", "s2", "b2"}));
  EXPECT_EQ(out[0].scalar<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(out[1].scalar<std::string>(), "hello");
  EXPECT_TRUE(out[2].scalar<bool>());
}

TEST(Session, KernelErrorNamesNodeAndKeepsCode) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder a(root.WithOpName("a"), DT_FLOAT, ops::Placeholder::Shape({-1, -1}));
  const ops::Placeholder b(root.WithOpName("b"), DT_FLOAT, ops::Placeholder::Shape({-1, -1}));
  ops::MatMul(root.WithOpName("dense/MatMul"), a, b);
  auto session = MakeSession(root);
  EXPECT_THAT(
      session->Run({{"a", Tensor(DT_FLOAT, {2, 3})}, {"b", Tensor(DT_FLOAT, {2, 3})}},
                   {"dense/MatMul"}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "node 'dense/MatMul' (MatMul) on /job:localhost/replica:0/task:0/device:CPU:0: ")));
}

TEST(Session, FetchOfUnknownNodeIsNotFound) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("c"), {1}, {1});
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {"a"}),
              StatusIs(absl::StatusCode::kNotFound, "FetchOutputs node a:0: not found"));
  EXPECT_THAT(session->Run({}, {"a:2"}),
              StatusIs(absl::StatusCode::kNotFound, "FetchOutputs node a:2: not found"));
}

TEST(Session, FeedOfUnknownNodeIsNotFound) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("c"), {1}, {1});
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({{"a", Tensor::Scalar<float>(1)}}, {"c"}),
              StatusIs(absl::StatusCode::kNotFound, "FeedInputs: unable to find feed output a:0"));
}

TEST(Session, UnknownTargetIsNotFound) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("c"), {1}, {1});
  auto session = MakeSession(root);
  EXPECT_THAT(
      session->Run({}, {}, {"a"}),
      StatusIs(absl::StatusCode::kNotFound, "PruneForTargets: Some target nodes not found: a"));
  // A target names a node, not a tensor.
  EXPECT_THAT(
      session->Run({}, {}, {"c:0"}),
      StatusIs(absl::StatusCode::kNotFound, "PruneForTargets: Some target nodes not found: c:0"));
}

TEST(Session, OutputIndexOutOfRangeNamesNodeOutputs) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("c"), {1}, {1});
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {"c:1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "FetchOutputs c:1: output index too large, must be < 1"));
  EXPECT_THAT(
      session->Run({{"c:3", Tensor::Scalar<float>(1)}}, {"c"}),
      StatusIs(absl::StatusCode::kInvalidArgument, "FeedInputs: c:3 should have output index < 1"));
}

TEST(Session, MalformedNamesGiveTheParserMessage) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("a"), {1}, {1});
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {"a:b"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "invalid tensor name 'a:b': the output index must be decimal digits"));
  EXPECT_THAT(session->Run({}, {"a:01"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "invalid tensor name 'a:01': leading zero in output index"));
  EXPECT_THAT(session->Run({{"_a", Tensor::Scalar<float>(1)}}, {"a"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("invalid tensor name '_a': node names match")));
  EXPECT_THAT(session->Run({}, {"^a"}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("a control input names no tensor")));
}

TEST(Session, FeedOfWrongDtypeNamesTensorAndBothDtypes) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT);
  ops::Identity(root.WithOpName("y"), x);
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({{"x", Tensor::Scalar<int32_t>(1)}}, {"y"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "tensor 'x:0' has dtype float, but the value fed for it has dtype int32"));
}

TEST(Session, FeedOfIncompatibleShapeIsRejected) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 2}));
  ops::Identity(root.WithOpName("y"), x);
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({{"x", Tensor(DT_FLOAT, {3})}}, {"y"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot feed value of shape [3] for tensor 'x:0', which has shape [?,2]"));
}

TEST(Session, UnfedPlaceholderAsksForAFeed) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 784}));
  const ops::Placeholder any(root.WithOpName("any"), DT_INT32);
  ops::Identity(root.WithOpName("y"), x);
  ops::Identity(root.WithOpName("z"), any);
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {"y"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "You must feed a value for placeholder tensor 'x' with dtype float and "
                       "shape [?,784]"));
  EXPECT_THAT(session->Run({}, {"z"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "You must feed a value for placeholder tensor 'any' with dtype int32"));
}

TEST(Session, NeedsAFetchOrATarget) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("c"), {1}, {1});
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one target")));
}

TEST(Session, BadNameStopsTheRunBeforeAnythingRuns) {
  const Scope root = ops::NewRootScope();
  ops::Neg(root.WithOpName("counted"), FloatConst(root, {1}, {1}));
  auto session = MakeSession(root, WithTestKernels());
  neg_runs = 0;
  EXPECT_THAT(session->Run({}, {"counted", "missing"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
  EXPECT_THAT(session->Run({}, {"counted"}, {"missing"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
  EXPECT_EQ(neg_runs.load(), 0);
  EXPECT_OK(session->Run({}, {"counted"}));
  EXPECT_EQ(neg_runs.load(), 1);
}

TEST(Session, RunsOnlyWhatFetchesNeed) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1}));
  // Fails at run time: 3 elements cannot take the shape [2,2].
  ops::Reshape(root.WithOpName("bad"), x, ops::Input({2, 2}));
  ops::Mul(root.WithOpName("good"), x, 2.0f);
  auto session = MakeSession(root);
  const Tensor feed = Tensor::FromVector<float>({1, 2, 3}, {3});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({{"x", feed}}, {"good"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(2, 4, 6));
  EXPECT_THAT(
      session->Run({{"x", feed}}, {"good", "bad"}),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("node 'bad' (Reshape) on /job:localhost/replica:0/task:0/device:CPU:0: ")));
}

TEST(Session, FeedingAnIntermediateTensorReplacesItsProducer) {
  const Scope root = ops::NewRootScope();
  const Output c = FloatConst(root.WithOpName("c"), {1, 2}, {2});
  const ops::Neg counted(root.WithOpName("counted"), c);
  ops::Mul(root.WithOpName("y"), counted, 3.0f);
  auto session = MakeSession(root, WithTestKernels());
  neg_runs = 0;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      session->Run({{"counted", Tensor::FromVector<float>({5, 7}, {2})}}, {"y", "counted"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(15, 21));
  // A fed tensor is fetched as fed.
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(5, 7));
  EXPECT_EQ(neg_runs.load(), 0);
  ASSERT_OK_AND_ASSIGN(out, session->Run({}, {"y"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(3, 6));
  EXPECT_EQ(neg_runs.load(), 1);
}

TEST(Session, KeepsFetchOrderAndDuplicates) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("b"), {2}, {1});
  FloatConst(root.WithOpName("a"), {1}, {1});
  auto session = MakeSession(root);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"b", "a:0", "b:0", "a"}));
  ASSERT_THAT(out, SizeIs(4));
  EXPECT_EQ(out[0].data<float>()[0], 2);
  EXPECT_EQ(out[1].data<float>()[0], 1);
  EXPECT_EQ(out[2].data<float>()[0], 2);
  EXPECT_EQ(out[3].data<float>()[0], 1);
}

TEST(Session, FirstErrorCancelsTheStep) {
  const Scope root = ops::NewRootScope();
  Output chain = FloatConst(root.WithOpName("c"), {1}, {1});
  for (int i = 0; i < 200; ++i) chain = ops::Neg(root, chain);
  ops::Identity(root.WithOpName("end"), chain);
  ops::NoOp(root.WithOpName("boom"));
  SessionOptions options = WithTestKernels();
  options.inter_op_threads = 1;
  auto session = MakeSession(root, options);
  neg_runs = 0;
  EXPECT_THAT(session->Run({}, {"end"}, {"boom"}),
              StatusIs(absl::StatusCode::kDataLoss,
                       "node 'boom' (NoOp) on /job:localhost/replica:0/task:0/device:CPU:0: the "
                       "disk is on fire"));
  EXPECT_LT(neg_runs.load(), 200);
}

TEST(Session, ConcurrentRunsGetTheirOwnResults) {
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({2}));
  const ops::Mul twice(root.WithOpName("twice"), x, 2.0f);
  ops::Add(root.WithOpName("y"), twice, FloatConst(root, {1, 1}, {2}));
  SessionOptions options;
  options.inter_op_threads = 2;
  auto session = MakeSession(root, options);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const float v = static_cast<float>(t * 1000 + i);
        absl::StatusOr<std::vector<Tensor>> out =
            session->Run({{"x", Tensor::FromVector<float>({v, -v}, {2})}}, {"y", "twice"});
        if (!out.ok() || (*out)[0].data<float>()[0] != 2 * v + 1 ||
            (*out)[0].data<float>()[1] != -2 * v + 1 || (*out)[1].data<float>()[0] != 2 * v) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The lines a session printed to its placement log.
std::vector<std::string> ReadLines(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), file) != nullptr) text += buffer;
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines;
}

TEST(Session, LogsPlacementOncePerExecutor) {
  const Scope root = ops::NewRootScope();
  const Output a = FloatConst(root.WithOpName("a"), {1}, {1});
  ops::Neg(root.WithOpName("n"), a);
  ops::Identity(root.WithOpName("other"), a);
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  SessionOptions options;
  options.log_device_placement = true;
  FileLogSink sink(log);
  options.log = &sink;
  auto session = MakeSession(root, options);
  ASSERT_OK(session->Run({}, {"n"}));
  ASSERT_OK(session->Run({}, {"n:0"}));
  ASSERT_OK(session->Run({}, {"n"}));
  EXPECT_THAT(ReadLines(log),
              ElementsAre("a: (Const): /job:localhost/replica:0/task:0/device:CPU:0",
                          "n: (Neg): /job:localhost/replica:0/task:0/device:CPU:0",
                          "/job:localhost/replica:0/task:0/device:CPU:0: 2 nodes, 0 B of "
                          "variables, 0 send, 0 recv"));
  // Another signature builds (and logs) another executor.
  std::fseek(log, 0, SEEK_END);
  ASSERT_OK(session->Run({}, {"other", "n"}));
  EXPECT_THAT(ReadLines(log), SizeIs(7));
  std::fclose(log);
}

TEST(Session, RequestsForMissingDevicesAreErrorsWithoutSoftPlacement) {
  const Scope root = ops::NewRootScope();
  const Output a = FloatConst(root.WithOpName("a").WithDevice("/gpu:0"), {1}, {1});
  ops::Neg(root.WithOpName("b"), a);
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {"b"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'a'"), HasSubstr("GPU:0"), HasSubstr("CPU:0"))));
}

TEST(Session, SoftPlacementRunsMissingDevicesOnTheLocalCpu) {
  const Scope root = ops::NewRootScope();
  const Output a = FloatConst(root.WithOpName("a").WithDevice("/job:localhost/task:0"), {1}, {1});
  const Output b = ops::Neg(root.WithOpName("b").WithDevice("/gpu:0"), a);
  ops::Neg(root.WithOpName("c").WithDevice("/device:CPU:0"), b);
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  SessionOptions options;
  options.log_device_placement = true;
  FileLogSink sink(log);
  options.log = &sink;
  options.allow_soft_placement = true;
  auto session = MakeSession(root, options);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"c"}));
  EXPECT_EQ(out[0].data<float>()[0], 1);
  EXPECT_THAT(
      ReadLines(log),
      ElementsAre("a: (Const): /job:localhost/replica:0/task:0/device:CPU:0",
                  "b: (Neg): /job:localhost/replica:0/task:0/device:CPU:0",
                  "c: (Neg): /job:localhost/replica:0/task:0/device:CPU:0", HasSubstr("3 nodes")));
  std::fclose(log);
}

TEST(Session, TimeoutCancelsTheStep) {
  const Scope root = ops::NewRootScope();
  ops::Sqrt(root.WithOpName("slow"), FloatConst(root, {4}, {1}));
  auto session = MakeSession(root, WithTestKernels());
  slow_saw_cancellation = false;
  RunOptions options;
  options.timeout_in_ms = 20;
  EXPECT_THAT(session->Run(options, {}, {"slow"}, {}, nullptr),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("20 ms")));
  EXPECT_TRUE(slow_saw_cancellation.load());
  // A step that finishes in time is unaffected by the option.
  options.timeout_in_ms = 60000;
  const Scope other = ops::NewRootScope();
  ops::Neg(other.WithOpName("n"), FloatConst(other, {4}, {1}));
  auto fast = MakeSession(other);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, fast->Run(options, {}, {"n"}, {}, nullptr));
  EXPECT_EQ(out[0].data<float>()[0], -4);
}

TEST(Session, TraceFillsStepStats) {
  const Scope root = ops::NewRootScope();
  const Output a = FloatConst(root.WithOpName("a"), {1, 2, 3, 4}, {4});
  ops::Neg(root.WithOpName("n"), a);
  auto session = MakeSession(root);
  RunMetadata metadata;
  ASSERT_OK(session->Run(RunOptions(), {}, {"n"}, {}, &metadata));
  EXPECT_TRUE(metadata.step_stats.empty());
  RunOptions trace;
  trace.trace = true;
  ASSERT_OK(session->Run(trace, {}, {"n"}, {}, &metadata));
  ASSERT_THAT(metadata.step_stats, SizeIs(2));
  // Completion order: the constant before its consumer.
  EXPECT_EQ(metadata.step_stats[0].node_name, "a");
  EXPECT_EQ(metadata.step_stats[1].node_name, "n");
  for (const NodeExecStats& stats : metadata.step_stats) {
    EXPECT_EQ(stats.device, kLocalCpuDeviceName);
    EXPECT_GT(stats.start_micros, 0);
    EXPECT_LE(stats.start_micros, stats.end_micros);
    EXPECT_EQ(stats.output_bytes, 16);
  }
  EXPECT_EQ(metadata.step_stats[1].op, "Neg");
}

TEST(Session, FreesIntermediatesAfterTheirLastConsumer) {
  constexpr int kLength = 10;
  constexpr int64_t kElements = 1 << 18;  // 1 MiB of floats.
  const Scope root = ops::NewRootScope();
  const ops::Placeholder x(root.WithOpName("x"), DT_FLOAT);
  Output chain = x;
  for (int i = 0; i < kLength; ++i) chain = ops::Square(root, chain);
  ops::Identity(root.WithOpName("end"), chain);
  SessionOptions options;
  options.inter_op_threads = 1;
  auto session = MakeSession(root, options);
  const Tensor feed(DT_FLOAT, {kElements});
  ASSERT_OK(session->Run({{"x", feed}}, {"end"}));  // Warms the cache.

  CachingAllocator* allocator = CpuCachingAllocator();
  const int64_t before = allocator->Stats().bytes_in_use;
  allocator->ResetPeak();
  {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({{"x", feed}}, {"end"}));
    EXPECT_EQ(out[0].NumElements(), kElements);
  }
  const AllocatorStats stats = allocator->Stats();
  EXPECT_EQ(stats.bytes_in_use, before);
  // At most an input and an output alive at a time, not every link.
  const int64_t tensor_bytes = kElements * 4;
  EXPECT_LE(stats.peak_bytes_in_use - before, 2 * tensor_bytes);
  EXPECT_GE(stats.peak_bytes_in_use - before, tensor_bytes);
}

TEST(Session, ExtendAddsNodesAndRejectsClashes) {
  const Scope first = ops::NewRootScope();
  FloatConst(first.WithOpName("a"), {2}, {1});
  auto session = MakeSession(first);

  const Scope clash = ops::NewRootScope();
  FloatConst(clash.WithOpName("a"), {3}, {1});
  ASSERT_OK_AND_ASSIGN(GraphDef clash_def, clash.ToGraphDef());
  EXPECT_THAT(session->Extend(clash_def),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node 'a'")));

  GraphDef dangling;
  NodeDef* bad = dangling.add_node();
  bad->set_name("bad");
  bad->set_op("Neg");
  bad->add_input("nowhere");
  EXPECT_THAT(session->Extend(dangling),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));

  GraphDef more;
  NodeDef* neg = more.add_node();
  neg->set_name("b");
  neg->set_op("Neg");
  neg->add_input("a");
  (*neg->mutable_attr())["T"].set_type(DT_FLOAT);
  ASSERT_OK(session->Extend(more));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"b", "a"}));
  EXPECT_EQ(out[0].data<float>()[0], -2);
  EXPECT_EQ(out[1].data<float>()[0], 2);
}

TEST(Session, InvalidGraphFailsNewSession) {
  GraphDef def;
  NodeDef* node = def.add_node();
  node->set_name("n");
  node->set_op("NoSuchOp");
  EXPECT_THAT(NewSession(SessionOptions(), def),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(Session, VariablesKeepTheirValueAcrossRunsUntilClose) {
  const Scope root = ops::NewRootScope();
  const Variable w(root, "w", {1.f, 2.f});
  ops::AssignAdd(root.WithOpName("step"), w.ref(), FloatConst(root, {10, 10}, {2}));
  ops::Mul(root.WithOpName("twice"), w, 2.0f);
  GlobalVariablesInitializer(root);
  auto session = MakeSession(root);
  EXPECT_THAT(session->Run({}, {"twice"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("Attempting to use uninitialized value w")));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> before, session->Run({}, {"w", "twice"}));
  ASSERT_OK(session->Run({}, {}, {"step"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> after, session->Run({}, {"w", "w/read"}));
  EXPECT_THAT(Values<float>(after[0]), ElementsAre(11, 12));
  EXPECT_THAT(Values<float>(after[1]), ElementsAre(11, 12));
  // Values fetched earlier are snapshots: the update did not reach them.
  EXPECT_THAT(Values<float>(before[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<float>(before[1]), ElementsAre(2, 4));
  ASSERT_OK(session->Close());
  EXPECT_THAT(session->Run({}, {"w"}), StatusIs(absl::StatusCode::kCancelled, ::testing::_));
}

TEST(Session, ClosedSessionRefusesToRun) {
  const Scope root = ops::NewRootScope();
  FloatConst(root.WithOpName("a"), {2}, {1});
  auto session = MakeSession(root);
  ASSERT_OK(session->Run({}, {"a"}));
  ASSERT_OK(session->Close());
  EXPECT_THAT(session->Run({}, {"a"}),
              StatusIs(absl::StatusCode::kCancelled, "Session has been closed."));
  EXPECT_THAT(session->Extend(GraphDef()), StatusIs(absl::StatusCode::kCancelled, ::testing::_));
}

}  // namespace
}  // namespace rill
