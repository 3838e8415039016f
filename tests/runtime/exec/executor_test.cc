#include "runtime/exec/executor.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "runtime/device/caching_allocator.h"
#include "runtime/device/device.h"
#include "runtime/exec/local_rendezvous.h"
#include "tests/runtime/test_kernels.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::Failing;
using ::rill::testing::FloatConst;
using ::rill::testing::slow_saw_cancellation;
using ::rill::testing::slow_started;
using ::rill::testing::StatusIs;
using ::rill::testing::UntilCancelled;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class TestDevice final : public Device {
 public:
  TestDevice() : Device(kLocalCpuDeviceName, kDeviceCpu), threads_(1), allocator_(CpuAllocator()) {}
  CachingAllocator* allocator() override { return &allocator_; }
  ResourceMgr* resource_manager() override { return &resource_mgr_; }
  const Eigen::ThreadPoolDevice* eigen_cpu() const override { return &threads_.device(); }
  const Eigen::ThreadPoolDevice* eigen_cpu_serial() const override { return &threads_.device(); }
  void CopyToHost(const Tensor& src, Tensor* dst, StatusCallback done) override {
    *dst = src;
    done(absl::OkStatus());
  }
  void CopyFromHost(const Tensor& src, Tensor* dst, StatusCallback done) override {
    *dst = src;
    done(absl::OkStatus());
  }

 private:
  CpuThreads threads_;  // One thread: serial already.
  CachingAllocator allocator_;
  ResourceMgr resource_mgr_;
};

// The names of the Neg nodes in the order they ran.
absl::Mutex order_mu;
std::vector<std::string> neg_order ABSL_GUARDED_BY(order_mu);

void ResetNegOrder() {
  absl::MutexLock lock(&order_mu);
  neg_order.clear();
}

std::vector<std::string> NegOrder() {
  absl::MutexLock lock(&order_mu);
  return neg_order;
}

// Neg: records its run and forwards its input.
class RecordingForward final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    {
      absl::MutexLock lock(&order_mu);
      neg_order.push_back(name());
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// VariableV2 and Assign, minimal: the executor's handling of reference
// edges is what these tests pin.
class TestVariable final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<std::shared_ptr<Var>> var = ctx.resource_manager()->LookupOrCreate<Var>(
        kDefaultContainer, name(),
        []() -> absl::StatusOr<std::shared_ptr<Var>> { return std::make_shared<Var>(DT_FLOAT); });
    if (!var.ok()) return var.status();
    ctx.set_output_ref(0, (*var)->tensor(), (*var)->mu());
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class TestAssign final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    {
      absl::MutexLock lock(ctx.input_ref_mutex(0));
      *ctx.mutable_input(0) = ctx.input(1).DeepCopy();
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }
};

// Abs: records the thread it ran on and forwards its input.
absl::Mutex threads_mu;
std::set<std::thread::id> abs_threads ABSL_GUARDED_BY(threads_mu);

std::set<std::thread::id> TakeAbsThreads() {
  absl::MutexLock lock(&threads_mu);
  return std::exchange(abs_threads, {});
}

// Sign does the same but is not expensive.
template <bool kExpensive>
class RecordingThread final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    {
      absl::MutexLock lock(&threads_mu);
      abs_threads.insert(std::this_thread::get_id());
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return kExpensive; }
};

// Exp: outputs the number of threads its intra-op device offered.
class RecordingIntraOpThreads final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.set_output(0, Tensor::Scalar<float>(static_cast<float>(ctx.eigen_cpu().numThreads())));
    return absl::OkStatus();
  }
};

// Log: waits (up to 10 s) until an Abs has run, then forwards its input.
class WaitsForAbs final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    absl::MutexLock lock(&threads_mu);
    if (!threads_mu.AwaitWithDeadline(
            absl::Condition(
                +[](std::set<std::thread::id>* threads) { return !threads->empty(); },
                &abs_threads),
            deadline)) {
      return absl::DeadlineExceededError("no Abs ran while this kernel waited");
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
};

// Rsqrt: not expensive, yet sleeps a whole quick-run budget; records the
// threads it ran on, in order, and forwards its input.
absl::Mutex sleeper_mu;
std::vector<std::thread::id> sleeper_threads ABSL_GUARDED_BY(sleeper_mu);

std::vector<std::thread::id> TakeSleeperThreads() {
  absl::MutexLock lock(&sleeper_mu);
  return std::exchange(sleeper_threads, {});
}

class SleepingForward final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    std::this_thread::sleep_for(std::chrono::nanoseconds(Executor::kQuickRunBudgetNanos));
    {
      absl::MutexLock lock(&sleeper_mu);
      sleeper_threads.push_back(std::this_thread::get_id());
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

const KernelRegistry& TestKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    // Registered first, so these win over the standard kernels.
    r->Register(KernelDef("Neg"), MakeKernel<RecordingForward>);
    r->Register(KernelDef("NoOp"), MakeKernel<Failing>);
    r->Register(KernelDef("Sqrt"), MakeKernel<UntilCancelled>);
    r->Register(KernelDef("VariableV2"), MakeKernel<TestVariable>);
    r->Register(KernelDef("Assign"), MakeKernel<TestAssign>);
    r->Register(KernelDef("Abs"), MakeKernel<RecordingThread<true>>);
    r->Register(KernelDef("Sign"), MakeKernel<RecordingThread<false>>);
    r->Register(KernelDef("Exp"), MakeKernel<RecordingIntraOpThreads>);
    r->Register(KernelDef("Log"), MakeKernel<WaitsForAbs>);
    r->Register(KernelDef("Rsqrt"), MakeKernel<SleepingForward>);
    RegisterStandardKernels(*r);
    return r;
  }();
  return *registry;
}

class ExecutorTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Executor>> Build(std::vector<TensorEndpoint> fetches,
                                                  std::vector<TensorEndpoint> feeds = {},
                                                  std::vector<const Node*> nodes = {}) {
    EXPECT_OK(root_.status());
    Executor::Params params;
    params.graph = root_.graph();
    params.nodes = std::move(nodes);
    params.feeds = std::move(feeds);
    params.fetches = std::move(fetches);
    params.device = run_device_ != nullptr ? run_device_ : &device_;
    params.registry = &TestKernels();
    params.inter_op_pool = pool_.get();
    params.parallel_nodes = parallel_nodes_;
    return Executor::Create(params);
  }

  // Eight Abs nodes, all ready at once; the step fetches their sum.
  Output EightAbsNodes() {
    const Output c = FloatConst(root_, {1}, {1});
    std::vector<Output> terms;
    for (int i = 0; i < 8; ++i) terms.push_back(ops::Abs(root_, c));
    return ops::AddN(root_.WithOpName("sum"), terms);
  }

  TestDevice device_;
  Device* run_device_ = nullptr;  // Null: device_.
  bool parallel_nodes_ = true;
  std::unique_ptr<Eigen::ThreadPool> pool_ =
      std::make_unique<Eigen::ThreadPool>(2, /*allow_spinning=*/false);
  Scope root_ = ops::NewRootScope();
};

TEST_F(ExecutorTest, RunsTheGraphAndReturnsFetches) {
  const Output c = FloatConst(root_.WithOpName("c"), {1, 2, 3}, {3});
  const ops::Square sq(root_.WithOpName("sq"), c);
  const ops::Add sum(root_.WithOpName("sum"), sq, c);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sum.node(), 0}, {sq.node(), 0}}));
  EXPECT_EQ(executor->num_nodes(), 3);
  std::vector<Tensor> fetched;
  ASSERT_OK(executor->Run(Executor::Args(), &fetched));
  ASSERT_THAT(fetched, SizeIs(2));
  EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(2, 6, 12));
  EXPECT_THAT(Values<float>(fetched[1]), ElementsAre(1, 4, 9));
}

TEST_F(ExecutorTest, MissingKernelIsNotFoundNamingTheNode) {
  FloatConst(root_.WithOpName("c"), {1}, {1});
  const KernelRegistry empty;
  Executor::Params params;
  params.graph = root_.graph();
  params.device = &device_;
  params.registry = &empty;
  EXPECT_THAT(
      Executor::Create(params),
      StatusIs(absl::StatusCode::kNotFound,
               HasSubstr("node 'c' (Const) on /job:localhost/replica:0/task:0/device:CPU:0: ")));
}

TEST_F(ExecutorTest, KernelErrorNamesTheNodeAndKeepsItsCode) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  const ops::Reshape r(root_.WithOpName("r"), x, ops::Input({2, 2}));
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{r.node(), 0}}, {{x.node(), 0}}));
  const Tensor feed = Tensor::FromVector<float>({1, 2, 3}, {3});
  Executor::Args args;
  args.feeds = absl::MakeConstSpan(&feed, 1);
  std::vector<Tensor> fetched;
  EXPECT_THAT(
      executor->Run(args, &fetched),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("node 'r' (Reshape) on /job:localhost/replica:0/task:0/device:CPU:0: ")));
  EXPECT_TRUE(fetched.empty());
  // The step's state is clean for the next one.
  const Tensor good = Tensor::FromVector<float>({1, 2, 3, 4}, {4});
  args.feeds = absl::MakeConstSpan(&good, 1);
  ASSERT_OK(executor->Run(args, &fetched));
  EXPECT_EQ(fetched[0].shape(), TensorShape({2, 2}));
}

TEST_F(ExecutorTest, FirstErrorKeepsReadyNodesFromStarting) {
  Output chain = FloatConst(root_.WithOpName("c"), {1}, {1});
  for (int i = 0; i < 100; ++i) chain = ops::Neg(root_, chain);
  const ops::NoOp boom(root_.WithOpName("boom"));
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{chain.node(), 0}}));
  ResetNegOrder();
  std::vector<Tensor> fetched;
  EXPECT_THAT(executor->Run(Executor::Args(), &fetched),
              StatusIs(absl::StatusCode::kDataLoss,
                       "node 'boom' (NoOp) on /job:localhost/replica:0/task:0/device:CPU:0: the "
                       "disk is on fire"));
  EXPECT_LT(NegOrder().size(), 100u);
}

TEST_F(ExecutorTest, ControlEdgesOrderNodes) {
  const ops::Neg first(root_.WithOpName("first"), FloatConst(root_, {1}, {1}));
  const ops::Neg second(root_.WithOpName("second").WithControlDependencies({first.operation}),
                        FloatConst(root_, {2}, {1}));
  const ops::Neg free_a(root_.WithOpName("free_a"), FloatConst(root_, {1}, {1}));
  const ops::Neg free_b(root_.WithOpName("free_b"), FloatConst(root_, {2}, {1}));
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{second.node(), 0}, {free_b.node(), 0}}));
  ResetNegOrder();
  std::vector<Tensor> fetched;
  ASSERT_OK(executor->Run(Executor::Args(), &fetched));
  const std::vector<std::string> order = NegOrder();
  // free_a is not needed by any fetch but is part of the executor.
  ASSERT_THAT(order, SizeIs(4));
  EXPECT_LT(std::find(order.begin(), order.end(), "first"),
            std::find(order.begin(), order.end(), "second"));
}

// A node with one producer (a data or a control edge) is readied by that
// producer alone; one with two edges from the same producer waits for both.
TEST_F(ExecutorTest, EachNodeWaitsForAllItsEdgesHoweverFew) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  const ops::Neg first(root_.WithOpName("first"), x);
  // Its data input is fed: the control edge is all it waits for.
  const ops::Neg second(root_.WithOpName("second").WithControlDependencies({first.operation}), x);
  const ops::Neg third(root_.WithOpName("third"), second);
  const ops::Add twice(root_.WithOpName("twice"), third, third);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{twice.node(), 0}}, {{x.node(), 0}}));
  for (int i = 0; i < 20; ++i) {
    ResetNegOrder();
    const Tensor feed = Tensor::FromVector<float>({static_cast<float>(i)}, {1});
    Executor::Args args;
    args.feeds = absl::MakeConstSpan(&feed, 1);
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(args, &fetched));
    EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(2.0f * static_cast<float>(i)));
    EXPECT_THAT(NegOrder(), ElementsAre("first", "second", "third"));
  }
}

TEST_F(ExecutorTest, ReadingAnUninitializedVariableFails) {
  const ops::VariableV2 v(root_.WithOpName("v"), PartialTensorShape({2}), DT_FLOAT);
  const ops::Identity read(root_.WithOpName("read"), v);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{read.node(), 0}}));
  std::vector<Tensor> fetched;
  EXPECT_THAT(executor->Run(Executor::Args(), &fetched),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "Attempting to use uninitialized value v (read by node 'read' (Identity) "
                       "on /job:localhost/replica:0/task:0/device:CPU:0)"));
  // Fetching the reference itself reads it too.
  ASSERT_OK_AND_ASSIGN(auto fetch_ref, Build({{v.node(), 0}}, {}, {v.node()}));
  EXPECT_THAT(fetch_ref->Run(Executor::Args(), &fetched),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("Attempting to use uninitialized value v")));
}

TEST_F(ExecutorTest, AssignGetsTheReferenceAndFetchesAreSnapshots) {
  const ops::VariableV2 v(root_.WithOpName("v"), PartialTensorShape({2}), DT_FLOAT);
  const ops::Placeholder value(root_.WithOpName("value"), DT_FLOAT);
  const ops::Assign assign(root_.WithOpName("assign"), v, value);
  const ops::Identity read(root_.WithOpName("read"), v);
  ASSERT_OK_AND_ASSIGN(auto assigner,
                       Build({{assign.node(), 0}}, {{value.node(), 0}}, {v.node(), assign.node()}));
  ASSERT_OK_AND_ASSIGN(auto reader, Build({{read.node(), 0}}, {}, {v.node(), read.node()}));

  const Tensor one = Tensor::FromVector<float>({1, 2}, {2});
  Executor::Args args;
  args.feeds = absl::MakeConstSpan(&one, 1);
  std::vector<Tensor> assigned;
  ASSERT_OK(assigner->Run(args, &assigned));
  EXPECT_THAT(Values<float>(assigned[0]), ElementsAre(1, 2));
  std::vector<Tensor> read_back;
  ASSERT_OK(reader->Run(Executor::Args(), &read_back));
  EXPECT_THAT(Values<float>(read_back[0]), ElementsAre(1, 2));

  const Tensor two = Tensor::FromVector<float>({5, 6}, {2});
  args.feeds = absl::MakeConstSpan(&two, 1);
  std::vector<Tensor> reassigned;
  ASSERT_OK(assigner->Run(args, &reassigned));
  EXPECT_THAT(Values<float>(reassigned[0]), ElementsAre(5, 6));
  // What earlier steps returned does not follow the variable.
  EXPECT_THAT(Values<float>(assigned[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<float>(read_back[0]), ElementsAre(1, 2));
}

TEST_F(ExecutorTest, FeedingAReferenceInputIsRejected) {
  const ops::VariableV2 v(root_.WithOpName("v"), PartialTensorShape({2}), DT_FLOAT);
  const ops::Assign assign(root_.WithOpName("assign"), v, FloatConst(root_, {1, 2}, {2}));
  EXPECT_THAT(Build({{assign.node(), 0}}, {{v.node(), 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 0 is a reference and cannot be fed")));
}

TEST_F(ExecutorTest, ExternalCancellationStopsARunningStep) {
  const ops::Sqrt slow(root_.WithOpName("slow"), FloatConst(root_, {4}, {1}));
  const ops::Neg after(root_.WithOpName("after"), slow);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{after.node(), 0}}));
  absl::Notification started;
  slow_started = &started;
  slow_saw_cancellation = false;
  ResetNegOrder();
  StepCancellation cancellation;
  Executor::Args args;
  args.cancellation = &cancellation;
  std::vector<Tensor> fetched;
  absl::Notification done;
  absl::Status result;
  executor->RunAsync(args, &fetched, [&](absl::Status status) {
    result = std::move(status);
    done.Notify();
  });
  started.WaitForNotification();
  cancellation.Cancel(absl::AbortedError("stop it"));
  done.WaitForNotification();
  slow_started = nullptr;
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kAborted, "stop it"));
  EXPECT_TRUE(slow_saw_cancellation.load());
  EXPECT_TRUE(NegOrder().empty());
}

TEST_F(ExecutorTest, FreesEachTensorAfterItsLastConsumer) {
  constexpr int kLength = 10;
  constexpr int64_t kBytes = int64_t{1} << 20;
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  Output chain = x;
  for (int i = 0; i < kLength; ++i) chain = ops::Square(root_, chain);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{chain.node(), 0}}, {{x.node(), 0}}));
  const Tensor feed(DT_FLOAT, {kBytes / 4});
  Executor::Args args;
  args.feeds = absl::MakeConstSpan(&feed, 1);
  {
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(args, &fetched));
    EXPECT_EQ(fetched[0].NumElements(), kBytes / 4);
    EXPECT_EQ(device_.allocator()->Stats().bytes_in_use, kBytes);
  }
  const AllocatorStats stats = device_.allocator()->Stats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.num_allocs, kLength);
  // One input and one output alive at a time, not all ten.
  EXPECT_EQ(stats.peak_bytes_in_use, 2 * kBytes);
}

TEST_F(ExecutorTest, UnusedOutputsAndFanOutsAreFreedToo) {
  constexpr int64_t kBytes = int64_t{1} << 16;
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  const ops::Square a(root_.WithOpName("a"), x);
  const ops::Square b(root_.WithOpName("b"), a);
  const ops::Square c(root_.WithOpName("c"), a);
  const ops::Add sum(root_.WithOpName("sum"), b, c);
  const ops::Square unused(root_.WithOpName("unused"), sum);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sum.node(), 0}}, {{x.node(), 0}}));
  const Tensor feed = Tensor::FromVector<float>(std::vector<float>(kBytes / 4, 2.f), {kBytes / 4});
  Executor::Args args;
  args.feeds = absl::MakeConstSpan(&feed, 1);
  {
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(args, &fetched));
    EXPECT_EQ(fetched[0].data<float>()[0], 32);
  }
  EXPECT_EQ(device_.allocator()->Stats().bytes_in_use, 0);
  EXPECT_EQ(device_.allocator()->Stats().num_allocs, 5);
}

TEST_F(ExecutorTest, ConcurrentStepsGetTheirOwnValues) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  const Output w = FloatConst(root_, {1, 2, 3, 4}, {2, 2});
  // Two expensive branches, so that steps also use the pool.
  const ops::MatMul left(root_, x, w);
  const ops::MatMul right(root_, x, w, ops::MatMul::TransposeB(true));
  const ops::Add y(root_.WithOpName("y"), left, right);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{y.node(), 0}}, {{x.node(), 0}}));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const float v = static_cast<float>(t * 100 + i);
        const Tensor feed = Tensor::FromVector<float>({v, 1}, {1, 2});
        Executor::Args args;
        args.step_id = t * 1000 + i;
        args.feeds = absl::MakeConstSpan(&feed, 1);
        std::vector<Tensor> fetched;
        // [v,1] x [[1,2],[3,4]] + [v,1] x [[1,3],[2,4]]
        if (!executor->Run(args, &fetched).ok() || fetched[0].data<float>()[0] != 2 * v + 5 ||
            fetched[0].data<float>()[1] != 5 * v + 8) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ExecutorTest, RunsWithoutAPoolOnTheCallingThread) {
  const Output w = FloatConst(root_, {1, 0, 0, 1}, {2, 2});
  const ops::MatMul a(root_, w, w);
  const ops::MatMul b(root_, w, w);
  const ops::Add y(root_.WithOpName("y"), a, b);
  pool_.reset();
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{y.node(), 0}}));
  std::vector<Tensor> fetched;
  ASSERT_OK(executor->Run(Executor::Args(), &fetched));
  EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(2, 0, 0, 2));
}

TEST_F(ExecutorTest, WithoutParallelNodesAStepRunsOnTheCallingThread) {
  parallel_nodes_ = false;
  const Output sum = EightAbsNodes();
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sum.node(), 0}}));
  TakeAbsThreads();
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(Executor::Args(), &fetched));
    EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(8));
  }
  EXPECT_THAT(TakeAbsThreads(), ElementsAre(std::this_thread::get_id()));
}

TEST_F(ExecutorTest, NodesMeasuredAsQuickAreNotHandedToThePool) {
  const Output sum = EightAbsNodes();
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sum.node(), 0}}));
  std::vector<Tensor> fetched;
  // Unmeasured nodes may go to the pool; the first steps measure them
  // (several, so that one run slowed by the machine is averaged away).
  for (int step = 0; step < 8; ++step) ASSERT_OK(executor->Run(Executor::Args(), &fetched));
  TakeAbsThreads();
  for (int step = 0; step < 3; ++step) ASSERT_OK(executor->Run(Executor::Args(), &fetched));
  // Each Abs takes well under Executor::kMinHandOffNanos.
  EXPECT_THAT(TakeAbsThreads(), ElementsAre(std::this_thread::get_id()));
}

// A step started by RunQuickHere, and whether it had finished when the call
// returned.
struct QuickStep {
  absl::Status status;
  bool finished_inline = false;
  std::vector<Tensor> fetched;
};

QuickStep RunStepQuickHere(const Executor& executor) {
  QuickStep step;
  absl::Notification done;
  Executor::Args args;
  args.runner = RunQuickHere;
  executor.RunAsync(args, &step.fetched, [&](absl::Status status) {
    step.status = std::move(status);
    done.Notify();
  });
  step.finished_inline = done.HasBeenNotified();
  done.WaitForNotification();
  return step;
}

TEST_F(ExecutorTest, QuickHereRunsNodesMeasuredAsQuickOnTheCallingThread) {
  const Output sum = EightAbsNodes();
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sum.node(), 0}}));
  std::vector<Tensor> fetched;
  for (int step = 0; step < 8; ++step) ASSERT_OK(executor->Run(Executor::Args(), &fetched));
  TakeAbsThreads();
  const QuickStep step = RunStepQuickHere(*executor);
  ASSERT_OK(step.status);
  EXPECT_THAT(Values<float>(step.fetched[0]), ElementsAre(8));
  EXPECT_TRUE(step.finished_inline);
  EXPECT_THAT(TakeAbsThreads(), ElementsAre(std::this_thread::get_id()));
}

TEST_F(ExecutorTest, QuickHereLeavesUnmeasuredExpensiveNodesToThePool) {
  const Output sum = EightAbsNodes();
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sum.node(), 0}}));
  TakeAbsThreads();
  const QuickStep step = RunStepQuickHere(*executor);
  ASSERT_OK(step.status);
  EXPECT_THAT(Values<float>(step.fetched[0]), ElementsAre(8));
  const std::set<std::thread::id> threads = TakeAbsThreads();
  EXPECT_FALSE(threads.empty());
  EXPECT_FALSE(threads.contains(std::this_thread::get_id()));
}

TEST_F(ExecutorTest, QuickHereHandsTheRestToThePoolOnceItsBudgetIsSpent) {
  // Three cheap nodes in a chain, each as long as the whole budget: the
  // first runs here, the others wherever the pool runs them.
  const Output c = FloatConst(root_, {3}, {1});
  const ops::Rsqrt y(root_.WithOpName("y"), ops::Rsqrt(root_, ops::Rsqrt(root_, c)));
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{y.node(), 0}}));
  TakeSleeperThreads();
  const QuickStep step = RunStepQuickHere(*executor);
  ASSERT_OK(step.status);
  EXPECT_THAT(Values<float>(step.fetched[0]), ElementsAre(3));
  EXPECT_FALSE(step.finished_inline);
  const std::vector<std::thread::id> threads = TakeSleeperThreads();
  ASSERT_THAT(threads, SizeIs(3));
  EXPECT_EQ(threads[0], std::this_thread::get_id());
  EXPECT_NE(threads[1], std::this_thread::get_id());
  EXPECT_NE(threads[2], std::this_thread::get_id());
}

TEST_F(ExecutorTest, QuickHereWithoutParallelNodesRunsTheStepOnThePool) {
  parallel_nodes_ = false;
  const Output c = FloatConst(root_, {3}, {1});
  const ops::Rsqrt y(root_.WithOpName("y"), c);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{y.node(), 0}}));
  TakeSleeperThreads();
  const QuickStep step = RunStepQuickHere(*executor);
  ASSERT_OK(step.status);
  const std::vector<std::thread::id> threads = TakeSleeperThreads();
  ASSERT_THAT(threads, SizeIs(1));
  EXPECT_NE(threads[0], std::this_thread::get_id());
}

TEST_F(ExecutorTest, KernelsTryTheIntraOpPoolAndRunWithoutIt) {
  CpuDevice two_threads(2);
  run_device_ = &two_threads;
  const ops::Exp threads(root_.WithOpName("threads"), FloatConst(root_, {1}, {1}));
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{threads.node(), 0}}));
  std::vector<float> offered;
  for (int step = 0; step < 4; ++step) {
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(Executor::Args(), &fetched));
    offered.push_back(fetched[0].scalar<float>());
  }
  // Both ways are measured before one is preferred (KernelCost).
  EXPECT_THAT(offered, ElementsAre(2, 1, 2, 1));
}

// Two halves of "c = [1, 2]; y = Square(c)" cut between c and y: the
// sender half runs c and _Send, the receiver half _Recv and y. With
// `fail_sender`, the sender half also holds a NoOp, which fails.
struct CutGraph {
  std::unique_ptr<Graph> sender;
  std::unique_ptr<Graph> receiver;
};

void AddTransferAttrs(NodeDef* node) {
  auto& attr = *node->mutable_attr();
  attr["tensor_name"].set_s("edge_1_c");
  attr["send_device"].set_s("/job:localhost/replica:0/task:0/device:CPU:0");
  attr["send_device_incarnation"].set_i(1);
  attr["recv_device"].set_s("/job:localhost/replica:0/task:0/device:CPU:1");
}

CutGraph MakeCutGraph(bool fail_sender) {
  GraphDef sender;
  NodeDef* c = sender.add_node();
  c->set_name("c");
  c->set_op("Const");
  (*c->mutable_attr())["dtype"].set_type(DT_FLOAT);
  *(*c->mutable_attr())["value"].mutable_tensor() =
      TensorToProto(Tensor::FromVector<float>({1, 2}, {2}));
  NodeDef* send = sender.add_node();
  send->set_name("c/_0");
  send->set_op("_Send");
  send->add_input("c");
  (*send->mutable_attr())["T"].set_type(DT_FLOAT);
  AddTransferAttrs(send);
  if (fail_sender) {
    send->add_input("^boom");
    NodeDef* boom = sender.add_node();
    boom->set_name("boom");
    boom->set_op("NoOp");
  }
  GraphDef receiver;
  NodeDef* recv = receiver.add_node();
  recv->set_name("c/_1");
  recv->set_op("_Recv");
  (*recv->mutable_attr())["tensor_type"].set_type(DT_FLOAT);
  AddTransferAttrs(recv);
  NodeDef* y = receiver.add_node();
  y->set_name("y");
  y->set_op("Square");
  y->add_input("c/_1");
  (*y->mutable_attr())["T"].set_type(DT_FLOAT);
  CutGraph cut;
  cut.sender = *ImportGraphDef(sender, StandardOps());
  cut.receiver = *ImportGraphDef(receiver, StandardOps());
  return cut;
}

// What the two halves of a CutGraph returned from one step.
struct CutStep {
  absl::Status sender;
  absl::Status receiver;
  std::vector<Tensor> fetched;  // y, from the receiver.
};

// The receiver half starts first on the pool (its _Recv waits without
// holding a thread), then the sender half runs on this thread.
// An executor per half of `cut`; the receiver fetches y.
struct CutExecutors {
  std::unique_ptr<Executor> receiver;
  std::unique_ptr<Executor> sender;
};

absl::StatusOr<CutExecutors> MakeCutExecutors(const CutGraph& cut, Device* device,
                                              Eigen::ThreadPoolInterface* pool) {
  Executor::Params params;
  params.device = device;
  params.registry = &TestKernels();
  params.inter_op_pool = pool;
  params.graph = cut.receiver.get();
  params.fetches = {{cut.receiver->FindNode("y"), 0}};
  CutExecutors executors;
  ASSIGN_OR_RETURN(executors.receiver, Executor::Create(params));
  params.graph = cut.sender.get();
  params.fetches = {};
  ASSIGN_OR_RETURN(executors.sender, Executor::Create(params));
  return executors;
}

absl::StatusOr<CutStep> RunCutGraph(const CutGraph& cut, Device* device,
                                    Eigen::ThreadPoolInterface* pool) {
  ASSIGN_OR_RETURN(CutExecutors executors, MakeCutExecutors(cut, device, pool));
  Executor& receiver = *executors.receiver;
  Executor& sender = *executors.sender;

  LocalRendezvous rendezvous;
  Executor::Args args;
  args.rendezvous = &rendezvous;
  CutStep step;
  absl::Notification received;
  receiver.RunAsync(args, &step.fetched, [&](absl::Status status) {
    step.receiver = std::move(status);
    received.Notify();
  });
  std::vector<Tensor> nothing;
  step.sender = sender.Run(args, &nothing);
  received.WaitForNotification();
  return step;
}

TEST_F(ExecutorTest, RecvGetsWhatAnotherExecutorSent) {
  ASSERT_OK_AND_ASSIGN(const CutStep step,
                       RunCutGraph(MakeCutGraph(/*fail_sender=*/false), &device_, pool_.get()));
  ASSERT_OK(step.sender);
  ASSERT_OK(step.receiver);
  EXPECT_THAT(Values<float>(step.fetched[0]), ElementsAre(1, 4));
}

// A CutGraph whose receiver half ends in Abs (records its thread) and,
// with `sender_waits`, whose sender half runs Log (waits for that Abs)
// after its _Send.
CutGraph MakeRecordingCutGraph(bool sender_waits) {
  const CutGraph cut = MakeCutGraph(/*fail_sender=*/false);
  GraphDef sender = cut.sender->ToGraphDef();
  GraphDef receiver = cut.receiver->ToGraphDef();
  for (NodeDef& node : *receiver.mutable_node()) {
    if (node.name() == "y") node.set_op("Abs");
  }
  if (sender_waits) {
    NodeDef* wait = sender.add_node();
    wait->set_name("wait");
    wait->set_op("Log");
    wait->add_input("c");
    wait->add_input("^c/_0");
    (*wait->mutable_attr())["T"].set_type(DT_FLOAT);
  }
  CutGraph recording;
  recording.sender = *ImportGraphDef(sender, StandardOps());
  recording.receiver = *ImportGraphDef(receiver, StandardOps());
  return recording;
}

// Both halves started on this thread inside one InlineContinuations scope:
// the receiver waits, the sender's _Send completes its receive, and the
// rest of the receiver runs on this thread when the scope ends.
struct InlineCutStep {
  bool received_before_scope_end = false;
  absl::Status sender;
  absl::Status receiver;
  std::vector<Tensor> fetched;
};

InlineCutStep RunCutGraphInline(const CutGraph& cut, Device* device,
                                Eigen::ThreadPoolInterface* pool) {
  absl::StatusOr<CutExecutors> executors = MakeCutExecutors(cut, device, pool);
  EXPECT_OK(executors);
  InlineCutStep step;
  if (!executors.ok()) return step;
  Executor& receiver = *executors->receiver;
  Executor& sender = *executors->sender;
  LocalRendezvous rendezvous;
  Executor::Args args;
  args.rendezvous = &rendezvous;
  args.runner = RunHere;
  absl::Notification received;
  absl::Notification sent;
  std::vector<Tensor> nothing;
  {
    InlineContinuations scope;
    receiver.RunAsync(args, &step.fetched, [&](absl::Status status) {
      step.receiver = std::move(status);
      received.Notify();
    });
    sender.RunAsync(args, &nothing, [&](absl::Status status) {
      step.sender = std::move(status);
      sent.Notify();
    });
    step.received_before_scope_end = received.HasBeenNotified();
  }
  received.WaitForNotification();
  sent.WaitForNotification();
  return step;
}

TEST_F(ExecutorTest, ReceiverContinuesOnTheSendingThreadWithoutAWake) {
  TakeAbsThreads();
  const InlineCutStep step =
      RunCutGraphInline(MakeRecordingCutGraph(/*sender_waits=*/false), &device_, pool_.get());
  ASSERT_OK(step.sender);
  ASSERT_OK(step.receiver);
  EXPECT_THAT(Values<float>(step.fetched[0]), ElementsAre(1, 2));
  // Queued until this thread had finished the sender's work.
  EXPECT_FALSE(step.received_before_scope_end);
  EXPECT_THAT(TakeAbsThreads(), ElementsAre(std::this_thread::get_id()));
}

TEST_F(ExecutorTest, QueuedReceiverIsHandedOffBeforeALongKernel) {
  // The sender's Log waits for the receiver's Abs: were the receiver kept
  // queued behind it on this thread, Log would time out.
  TakeAbsThreads();
  const InlineCutStep step =
      RunCutGraphInline(MakeRecordingCutGraph(/*sender_waits=*/true), &device_, pool_.get());
  ASSERT_OK(step.sender);
  ASSERT_OK(step.receiver);
  const std::set<std::thread::id> threads = TakeAbsThreads();
  ASSERT_THAT(threads, SizeIs(1));
  EXPECT_NE(*threads.begin(), std::this_thread::get_id());
}

// Takes what a step's _Send leaves instead of delivering it, and passes
// receives on to `inner`.
class CapturingRendezvous final : public Rendezvous {
 public:
  explicit CapturingRendezvous(Rendezvous* inner) : inner_(inner) {}
  absl::Status Send(const PreparedRendezvousKey& key, const Tensor& value) override {
    key_ = key;
    value_ = value;
    return absl::OkStatus();
  }
  void RecvAsync(const PreparedRendezvousKey& key, DoneCallback done) override {
    inner_->RecvAsync(key, std::move(done));
  }
  void StartAbort(const absl::Status& status) override { inner_->StartAbort(status); }
  const PreparedRendezvousKey& key() const { return key_; }
  const Tensor& value() const { return value_; }

 private:
  Rendezvous* const inner_;
  PreparedRendezvousKey key_;
  Tensor value_;
};

TEST_F(ExecutorTest, QuickContinuationsRunWhereTheTensorArrives) {
  CutGraph cut = MakeCutGraph(/*fail_sender=*/false);
  GraphDef receiver = cut.receiver->ToGraphDef();
  for (NodeDef& node : *receiver.mutable_node()) {
    if (node.name() == "y") node.set_op("Sign");
  }
  cut.receiver = *ImportGraphDef(receiver, StandardOps());
  ASSERT_OK_AND_ASSIGN(CutExecutors executors, MakeCutExecutors(cut, &device_, pool_.get()));
  LocalRendezvous local;
  CapturingRendezvous capturing(&local);
  Executor::Args args;
  args.rendezvous = &capturing;
  std::vector<Tensor> nothing;
  ASSERT_OK(executors.sender->Run(args, &nothing));

  for (const bool quick_here : {true, false}) {
    LocalRendezvous arrivals;
    args.rendezvous = &arrivals;
    TakeAbsThreads();
    absl::Notification received;
    absl::Status status;
    std::vector<Tensor> fetched;
    args.runner = RunQuickHere;
    executors.receiver->RunAsync(args, &fetched, [&](absl::Status s) {
      status = std::move(s);
      received.Notify();
    });
    ASSERT_FALSE(received.HasBeenNotified());  // Waiting in _Recv.
    if (quick_here) {
      QuickContinuationsHere scope;
      ASSERT_OK(arrivals.Send(capturing.key(), capturing.value()));
      EXPECT_TRUE(received.HasBeenNotified());
    } else {
      ASSERT_OK(arrivals.Send(capturing.key(), capturing.value()));
    }
    received.WaitForNotification();
    ASSERT_OK(status);
    EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(1, 2));
    const std::set<std::thread::id> threads = TakeAbsThreads();
    ASSERT_THAT(threads, SizeIs(1));
    EXPECT_EQ(*threads.begin() == std::this_thread::get_id(), quick_here);
  }
}

TEST_F(ExecutorTest, SendAndRecvInOneStepOnOneThread) {
  // Both halves in one executor without a pool: whichever of _Recv and
  // _Send runs first, the step completes on the calling thread.
  const CutGraph cut = MakeCutGraph(/*fail_sender=*/false);
  GraphDef both = cut.sender->ToGraphDef();
  const GraphDef receiver = cut.receiver->ToGraphDef();
  for (const NodeDef& node : receiver.node()) *both.add_node() = node;
  ASSERT_OK_AND_ASSIGN(auto graph, ImportGraphDef(both, StandardOps()));
  pool_.reset();
  Executor::Params params;
  params.graph = graph.get();
  params.device = &device_;
  params.registry = &TestKernels();
  params.fetches = {{graph->FindNode("y"), 0}};
  ASSERT_OK_AND_ASSIGN(auto executor, Executor::Create(params));
  for (int step = 0; step < 3; ++step) {
    LocalRendezvous rendezvous;
    Executor::Args args;
    args.rendezvous = &rendezvous;
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(args, &fetched));
    EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(1, 4));
  }
}

TEST_F(ExecutorTest, AFailingSenderAbortsTheWaitingReceiver) {
  ASSERT_OK_AND_ASSIGN(const CutStep step,
                       RunCutGraph(MakeCutGraph(/*fail_sender=*/true), &device_, pool_.get()));
  EXPECT_THAT(step.sender, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("node 'boom'")));
  EXPECT_THAT(
      step.receiver,
      StatusIs(
          absl::StatusCode::kDataLoss,
          HasSubstr(
              "node 'c/_1' (_Recv) on /job:localhost/replica:0/task:0/device:CPU:0: node 'boom'")));
}

TEST_F(ExecutorTest, SendWithoutARendezvousFails) {
  const CutGraph cut = MakeCutGraph(/*fail_sender=*/false);
  Executor::Params params;
  params.graph = cut.sender.get();
  params.device = &device_;
  params.registry = &TestKernels();
  params.inter_op_pool = pool_.get();
  ASSERT_OK_AND_ASSIGN(auto sender, Executor::Create(params));
  std::vector<Tensor> nothing;
  EXPECT_THAT(
      sender->Run(Executor::Args(), &nothing),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("node 'c/_0' (_Send) on /job:localhost/replica:0/task:0/device:CPU:0: "
                         "_Send needs a rendezvous")));
}

TEST_F(ExecutorTest, CollectsStatsPerNode) {
  const Output c = FloatConst(root_.WithOpName("c"), {1, 2}, {2});
  const ops::Square sq(root_.WithOpName("sq"), c);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{sq.node(), 0}}));
  std::vector<NodeExecStats> stats;
  Executor::Args args;
  args.stats = &stats;
  std::vector<Tensor> fetched;
  ASSERT_OK(executor->Run(args, &fetched));
  ASSERT_THAT(stats, SizeIs(2));
  EXPECT_EQ(stats[0].node_name, "c");
  EXPECT_EQ(stats[1].node_name, "sq");
  EXPECT_EQ(stats[1].op, "Square");
  EXPECT_EQ(stats[1].device, kLocalCpuDeviceName);
  EXPECT_EQ(stats[1].output_bytes, 8);
  EXPECT_LE(stats[1].start_micros, stats[1].end_micros);
}

TEST_F(ExecutorTest, RejectsFeedsOfTheWrongDtypeBeforeRunning) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  const ops::Neg n(root_.WithOpName("n"), x);
  ASSERT_OK_AND_ASSIGN(auto executor, Build({{n.node(), 0}}, {{x.node(), 0}}));
  const Tensor feed = Tensor::Scalar<double>(1);
  Executor::Args args;
  args.feeds = absl::MakeConstSpan(&feed, 1);
  ResetNegOrder();
  std::vector<Tensor> fetched;
  EXPECT_THAT(executor->Run(args, &fetched),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "tensor 'x:0' has dtype float, but the value fed for it has dtype double"));
  EXPECT_TRUE(NegOrder().empty());
}

TEST_F(ExecutorTest, InputFromOutsideTheNodesMustBeFed) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT);
  const ops::Neg n(root_.WithOpName("n"), x);
  EXPECT_THAT(Build({{n.node(), 0}}, {}, {n.node()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 0 comes from 'x', which neither runs nor is fed")));
}

}  // namespace
}  // namespace rill
