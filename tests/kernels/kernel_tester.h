// KernelTester runs one kernel on given inputs and attrs, as the executor
// would, and checks its output shapes against the op's shape function; plus
// matchers that compare tensors exactly or within a tolerance.
#ifndef RILL_TESTS_KERNELS_KERNEL_TESTER_H_
#define RILL_TESTS_KERNELS_KERNEL_TESTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/rendezvous.h"
#include "kernels/framework/resource_mgr.h"

namespace rill::testing {

// Example:
//   KernelTester t("MatMul");
//   t.Attr("transpose_b", true).Input<float>({2, 2}, {1, 2, 3, 4}).Input<float>({2, 2}, {...});
//   ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
// One Input/InputList call per OpDef input arg, in order. Type attrs (T, N,
// list(type)) left unset are inferred from the inputs. The node's input
// strings are the OpDef arg names unless a RefInput names its variable.
class KernelTester {
 public:
  explicit KernelTester(std::string op, std::string device_type = "CPU");

  KernelTester& Attr(const std::string& name, AttrValue value);
  template <typename T>
  KernelTester& Attr(const std::string& name, T value) {
    return Attr(name, MakeAttr(value));
  }
  KernelTester& Input(Tensor value);
  template <typename T>
  KernelTester& Input(const TensorShape& shape, std::vector<T> values) {
    return Input(Tensor::FromVector<T>(absl::MakeConstSpan(values), shape));
  }
  // The tensors of a list argument (N * T, list(type)).
  KernelTester& InputList(std::vector<Tensor> values);
  // A reference input: the kernel reads and writes `*variable`, guarded by
  // a mutex of the tester's. `name` is the node's input string, what
  // messages call the variable (default: the OpDef arg name).
  KernelTester& RefInput(Tensor* variable, std::string name = "");
  // A reference input to `var`'s tensor under its mutex.
  KernelTester& RefInput(Var* var, std::string name = "");
  // A reference input to what a reference output of another run points at
  // (a variable, an accumulator's handle). REQUIRES: ref.is_ref().
  KernelTester& RefInput(const TensorValue& ref, std::string name = "");

  // Shape inference is told nothing about the input shapes, as when they
  // come from placeholders of unknown shape, so that the kernel's own
  // run-time checks are reached.
  KernelTester& UnknownInputShapes();
  // The resource manager the kernel sees (the tester's own by default);
  // testers given the same one share variables.
  KernelTester& WithResourceMgr(std::shared_ptr<ResourceMgr> resources);
  ResourceMgr& resource_manager() const { return *resources_; }
  // The step the kernel runs in (0 by default): per-step state
  // (TensorArrays, stacks) lives in that step's container.
  KernelTester& WithStepId(int64_t step_id);
  const std::shared_ptr<ResourceMgr>& shared_resource_manager() const { return resources_; }
  // The step's cancellation the kernel sees (none by default); it must
  // outlive the run.
  KernelTester& WithCancellation(StepCancellation* cancellation);
  // The step's rendezvous (_Send, _Recv) and the device's context (a
  // device with memory of its own); none by default. Both must outlive
  // the runs.
  KernelTester& WithRendezvous(Rendezvous* rendezvous);
  KernelTester& WithDeviceContext(DeviceContext* device_context);
  // Runs on a device with memory of its own: the inputs (variables
  // included) are copied to it through `device_context` first, outputs
  // are allocated from `allocator`, and Run copies outputs and variables
  // back to the host. Both must outlive the runs.
  KernelTester& OnDevice(Allocator* allocator, DeviceContext* device_context);

  // Builds and runs the kernel with an intra-op pool of `num_threads`.
  // Fails when the output shapes disagree with the shape function. A
  // reference output is returned as its current value.
  absl::StatusOr<std::vector<Tensor>> Run(int num_threads = 2) const;
  // Run() with the outputs as the kernel set them: references stay
  // references (to a variable's storage, not checked when uninitialized).
  absl::StatusOr<std::vector<TensorValue>> RunValues(int num_threads = 2) const;
  // Run() for an op with exactly one output.
  absl::StatusOr<Tensor> RunOne(int num_threads = 2) const;

  // A kernel started without waiting for it: an async kernel (a blocking
  // dequeue) finishes when some other thread lets it.
  class PendingRun;
  // Starts the kernel and returns at once, so that the test can act while
  // an async kernel waits; errors before the kernel runs come from Wait.
  std::unique_ptr<PendingRun> Start(int num_threads = 2) const;

 private:
  struct Invocation;
  absl::StatusOr<std::unique_ptr<Invocation>> Prepare(int num_threads) const;
  // The outputs of a finished run, checked as Run() checks them.
  static absl::StatusOr<std::vector<TensorValue>> Outputs(const Invocation& run);

  struct Arg {
    std::vector<Tensor> values;
    bool is_list = false;
    Tensor* ref = nullptr;
    DataType ref_dtype = DT_INVALID;
    absl::Mutex* ref_mu = nullptr;
    std::shared_ptr<absl::Mutex> owned_mu;  // For a plain Tensor* reference.
    std::string name;
  };
  std::string op_;
  std::string device_type_;
  NodeDef node_;
  std::vector<Arg> args_;
  bool unknown_input_shapes_ = false;
  std::shared_ptr<ResourceMgr> resources_ = std::make_shared<ResourceMgr>();
  int64_t step_id_ = 0;
  StepCancellation* cancellation_ = nullptr;
  Rendezvous* rendezvous_ = nullptr;
  DeviceContext* device_context_ = nullptr;
  Allocator* device_allocator_ = nullptr;  // Set by OnDevice.
};

// Thread safety: one test thread uses it; the kernel finishes on any.
class KernelTester::PendingRun {
 public:
  // A run still waiting is left running (its state leaks) so that the test
  // fails rather than crashes.
  ~PendingRun();
  PendingRun(const PendingRun&) = delete;
  PendingRun& operator=(const PendingRun&) = delete;

  // Whether the kernel has called its done callback.
  bool finished() const;
  // Waits up to `limit` for the kernel, then returns what Run() would;
  // DEADLINE_EXCEEDED when it has not finished by then.
  absl::StatusOr<std::vector<Tensor>> Wait(absl::Duration limit = absl::Seconds(10));

 private:
  friend class KernelTester;
  explicit PendingRun(std::unique_ptr<Invocation> run);
  std::unique_ptr<Invocation> run_;
};

// A tensor of `values` with `shape`, for expected results.
template <typename T>
Tensor MakeTensor(const TensorShape& shape, std::vector<T> values) {
  return Tensor::FromVector<T>(absl::MakeConstSpan(values), shape);
}

// A variable holding a copy of `value`, as if assigned; and a variable's
// current value, read under its mutex.
std::shared_ptr<Var> VarHolding(const Tensor& value);
Tensor ValueOf(Var& var);

// A tensor of `shape` filled with uniform values in [low, high) from a
// fixed seed, for comparing kernels against reference implementations.
Tensor RandomTensor(DataType dtype, const TensorShape& shape, int seed, double low = -1.0,
                    double high = 1.0);

// Describes why `actual` differs from `expected` (dtype, shape, or the
// first differing element with its index); empty when they match within
// |a - e| <= atol + rtol * |e| (exact for non-float types; NaN matches NaN
// and an infinity itself).
std::string TensorDifference(const Tensor& expected, const Tensor& actual, double atol,
                             double rtol);

MATCHER_P(TensorEq, expected, "") {
  const std::string diff = TensorDifference(expected, arg, 0, 0);
  *result_listener << diff;
  return diff.empty();
}

MATCHER_P3(TensorNear, expected, atol, rtol, "") {
  const std::string diff = TensorDifference(expected, arg, atol, rtol);
  *result_listener << diff;
  return diff.empty();
}

}  // namespace rill::testing

#endif  // RILL_TESTS_KERNELS_KERNEL_TESTER_H_
