// The executor's profiler ranges: a device that annotates ops gets one
// range per node, on the thread that runs the node's kernel and around
// that call only (an async kernel's range ends when ComputeAsync returns,
// not when it finishes); a device that does not is never called.
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "runtime/device/caching_allocator.h"
#include "runtime/device/device.h"
#include "runtime/exec/executor.h"
#include "tests/runtime/test_kernels.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::FloatConst;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// What the device's ranges and the test kernels saw, in order.
struct Event {
  enum Kind { kBegin, kCompute, kEnd };
  Kind kind;
  std::string node;  // Empty for kEnd.
  std::thread::id thread;
};

absl::Mutex log_mu;
std::vector<Event> event_log ABSL_GUARDED_BY(log_mu);

// Returns the event's index.
size_t Record(Event::Kind kind, std::string node) {
  absl::MutexLock lock(&log_mu);
  event_log.push_back({kind, std::move(node), std::this_thread::get_id()});
  return event_log.size() - 1;
}

std::vector<Event> TakeLog() {
  absl::MutexLock lock(&log_mu);
  return std::exchange(event_log, {});
}

// Blocks until `thread` has ended a range after event `after`.
void AwaitRangeEnd(std::thread::id thread, size_t after) {
  struct Wanted {
    std::thread::id thread;
    size_t after;
  } wanted{thread, after};
  const auto ended = [](Wanted* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(log_mu) {
    for (size_t i = w->after + 1; i < event_log.size(); ++i) {
      if (event_log[i].kind == Event::kEnd && event_log[i].thread == w->thread) return true;
    }
    return false;
  };
  absl::MutexLock lock(&log_mu);
  log_mu.Await(absl::Condition(+ended, &wanted));
}

// Neg: records its run and forwards its input.
class RecordingForward final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    Record(Event::kCompute, name());
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// The threads DeferredForward finishes on; joined by the test.
absl::Mutex completers_mu;
std::vector<std::thread> completers ABSL_GUARDED_BY(completers_mu);

void JoinCompleters() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&completers_mu);
    threads = std::exchange(completers, {});
  }
  for (std::thread& thread : threads) thread.join();
}

// Set before a step: whether DeferredForward waits for its range to end.
bool await_range_end = false;

// Abs: records its start, then forwards its input from a thread of its own
// (with await_range_end, once the range around ComputeAsync has ended).
class DeferredForward final : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(KernelContext& ctx, DoneCallback done) const override {
    const size_t started = Record(Event::kCompute, name());
    const std::thread::id caller = std::this_thread::get_id();
    absl::MutexLock lock(&completers_mu);
    completers.emplace_back([&ctx, done = std::move(done), caller, started] {
      if (await_range_end) AwaitRangeEnd(caller, started);
      ctx.set_output(0, ctx.input(0));
      done(absl::OkStatus());
    });
  }
};

const KernelRegistry& TestKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    // Registered first, so these win over the standard kernels.
    r->Register(KernelDef("Neg"), MakeKernel<RecordingForward>);
    r->Register(KernelDef("Abs"), MakeKernel<DeferredForward>);
    RegisterStandardKernels(*r);
    return r;
  }();
  return *registry;
}

// A CPU device whose ranges go to the log, when it annotates ops.
class RangeLoggingDevice final : public Device {
 public:
  explicit RangeLoggingDevice(bool annotates_ops)
      : Device(kLocalCpuDeviceName, kDeviceCpu, annotates_ops),
        threads_(1),
        allocator_(CpuAllocator()) {}
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
  void BeginOpRange(const NodeDef& node) override { Record(Event::kBegin, node.name()); }
  void EndOpRange() override { Record(Event::kEnd, ""); }

 private:
  CpuThreads threads_;  // One thread: serial already.
  CachingAllocator allocator_;
  ResourceMgr resource_mgr_;
};

// Node -> the nodes whose kernel ran inside its range (itself, when its
// kernel records).
using Ranges = std::map<std::string, std::vector<std::string>>;

// Each thread's ranges, checked to be Begin, the node's kernel calls if
// any, End, one after another.
Ranges RangesOf(const std::vector<Event>& events) {
  std::map<std::thread::id, std::string> open;  // Per thread: the node of its open range.
  Ranges ranges;
  for (const Event& event : events) {
    const auto it = open.find(event.thread);
    switch (event.kind) {
      case Event::kBegin:
        if (it != open.end()) ADD_FAILURE() << event.node << " began inside " << it->second;
        EXPECT_FALSE(ranges.contains(event.node)) << event.node << " began twice";
        open[event.thread] = event.node;
        ranges[event.node];
        break;
      case Event::kCompute:
        if (it == open.end()) {
          ADD_FAILURE() << event.node << "'s kernel ran outside any range";
        } else {
          ranges[it->second].push_back(event.node);
        }
        break;
      case Event::kEnd:
        if (it == open.end()) {
          ADD_FAILURE() << "a range ended that had not begun";
        } else {
          open.erase(it);
        }
        break;
    }
  }
  EXPECT_THAT(open, IsEmpty());
  return ranges;
}

class OpRangeTest : public ::testing::Test {
 protected:
  ~OpRangeTest() override {
    JoinCompleters();
    TakeLog();
  }

  // c -> Neg -> Abs -> Neg, whose test kernels forward their input (Abs
  // asynchronously, finishing on another thread); runs one step on
  // `device` and checks the result.
  void RunStep(Device& device) {
    await_range_end = device.annotates_ops();
    const Output c = FloatConst(root_.WithOpName("c"), {-2}, {1});
    const Output first = ops::Neg(root_.WithOpName("first"), c);
    const Output deferred = ops::Abs(root_.WithOpName("deferred"), first);
    const Output last = ops::Neg(root_.WithOpName("last"), deferred);
    ASSERT_OK(root_.status());
    Executor::Params params;
    params.graph = root_.graph();
    params.fetches = {{last.node(), 0}};
    params.device = &device;
    params.registry = &TestKernels();
    params.inter_op_pool = pool_.get();
    ASSERT_OK_AND_ASSIGN(const std::unique_ptr<Executor> executor, Executor::Create(params));
    std::vector<Tensor> fetched;
    ASSERT_OK(executor->Run(Executor::Args(), &fetched));
    JoinCompleters();
    ASSERT_EQ(fetched.size(), 1u);
    EXPECT_THAT(Values<float>(fetched[0]), ElementsAre(-2));  // Each kernel forwards.
  }

  std::unique_ptr<Eigen::ThreadPool> pool_ =
      std::make_unique<Eigen::ThreadPool>(2, /*allow_spinning=*/false);
  Scope root_ = ops::NewRootScope();
};

TEST_F(OpRangeTest, AnnotatingDeviceGetsOneRangePerNodeAroundItsKernelCall) {
  RangeLoggingDevice device(/*annotates_ops=*/true);
  RunStep(device);
  EXPECT_EQ(
      RangesOf(TakeLog()),
      (Ranges{{"c", {}}, {"first", {"first"}}, {"deferred", {"deferred"}}, {"last", {"last"}}}));
}

TEST_F(OpRangeTest, DeviceWithoutAnnotationsIsNeverAskedForRanges) {
  RangeLoggingDevice device(/*annotates_ops=*/false);
  RunStep(device);
  std::vector<std::string> kernels;
  for (const Event& event : TakeLog()) {
    EXPECT_EQ(event.kind, Event::kCompute) << event.node;
    kernels.push_back(event.node);
  }
  EXPECT_THAT(kernels, ElementsAre("first", "deferred", "last"));
}

TEST(ScopedOpRange, EndsTheRangeItBeganWhenTheDeviceAnnotatesOps) {
  NodeDef node;
  node.set_name("dense/MatMul");
  node.set_op("MatMul");
  RangeLoggingDevice annotating(/*annotates_ops=*/true);
  {
    const ScopedOpRange range(annotating, node);
    Record(Event::kCompute, "dense/MatMul");
  }
  RangeLoggingDevice plain(/*annotates_ops=*/false);
  { const ScopedOpRange range(plain, node); }
  EXPECT_EQ(RangesOf(TakeLog()), (Ranges{{"dense/MatMul", {"dense/MatMul"}}}));
}

}  // namespace
}  // namespace rill
