// Sessions with nodes on /device:GPU:0: variables in GPU memory, a training
// step computed there with only feeds and fetches crossing to the host,
// and the same numbers as the same graph on the CPU. Skipped without a GPU.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/device/device_query.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::RandomTensor;
using ::rill::testing::Values;
using ::testing::HasSubstr;
using ::testing::Pointwise;

class GpuSession : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuQuery gpus = QueryGpuDevices();
    if (gpus.devices.empty()) GTEST_SKIP() << "no GPU to test on: " << gpus.reason;
  }
};

struct Trained {
  std::vector<float> w, b, loss;
};

// Three steps of a 784-128-10 layer pair with Adam on `device` ("/cpu:0" or
// "/gpu:0"), from the same initial values and batches.
absl::StatusOr<Trained> TrainOn(const std::string& device, LogSink* placement_log) {
  const Scope root = ops::NewRootScope().WithDevice(device);
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const Output labels = ops::Placeholder(root.WithOpName("labels"), DT_INT64);
  const Variable w(root, "w", RandomTensor(TensorShape({784, 10}), 1));
  const Variable b(root, "b", RandomTensor(TensorShape({10}), 2));
  const Output logits = ops::BiasAdd(root.WithOpName("logits"),
                                     ops::MatMul(root, ops::Relu(root, x), w.value()), b.value());
  const Output loss =
      ops::Mean(root.WithOpName("loss"),
                ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss, {0});
  AdamOptimizer adam(0.01);
  ASSIGN_OR_RETURN(const Operation train, adam.Minimize(root, loss, {w, b}));
  const Operation init = GlobalVariablesInitializer(root);
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());

  SessionOptions options;
  options.log_device_placement = placement_log != nullptr;
  options.log = placement_log;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options, graph));
  RETURN_IF_ERROR(session->Run({}, {}, {init.name()}).status());
  Trained trained;
  for (int step = 0; step < 3; ++step) {
    Tensor batch_labels(DT_INT64, TensorShape({64}));
    for (int i = 0; i < 64; ++i) batch_labels.data<int64_t>()[i] = (i * 7 + step) % 10;
    ASSIGN_OR_RETURN(std::vector<Tensor> out,
                     session->Run({{"x", RandomTensor(TensorShape({64, 784}), 10 + step)},
                                   {"labels", batch_labels}},
                                  {loss.name()}, {train.name()}));
    trained.loss.push_back(out[0].scalar<float>());
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> vars, session->Run({}, {w.name(), b.name()}));
  trained.w = Values<float>(vars[0]);
  trained.b = Values<float>(vars[1]);
  return trained;
}

TEST_F(GpuSession, TrainsOnTheGpuAsOnTheCpu) {
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  FileLogSink sink(log);
  ASSERT_OK_AND_ASSIGN(const Trained gpu, TrainOn("/gpu:0", &sink));
  ASSERT_OK_AND_ASSIGN(const Trained cpu, TrainOn("/cpu:0", nullptr));
  std::rewind(log);
  std::string placement;
  for (int c = std::fgetc(log); c != EOF; c = std::fgetc(log)) placement += static_cast<char>(c);
  std::fclose(log);
  EXPECT_THAT(placement,
              HasSubstr("w: (VariableV2): /job:localhost/replica:0/task:0/device:GPU:0"));
  EXPECT_THAT(placement, HasSubstr("(ApplyAdam): /job:localhost/replica:0/task:0/device:GPU:0"));
  EXPECT_THAT(gpu.loss, Pointwise(::testing::FloatNear(1e-4), cpu.loss));
  EXPECT_THAT(gpu.w, Pointwise(::testing::FloatNear(1e-4), cpu.w));
  EXPECT_THAT(gpu.b, Pointwise(::testing::FloatNear(1e-4), cpu.b));
}

TEST_F(GpuSession, ResourceVariablesLiveOnTheGpu) {
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Output handle = ops::VarHandleOp(root.WithOpName("v"), DT_FLOAT, PartialTensorShape({3}));
  const Operation assign = ops::AssignVariableOp(
      root.WithOpName("assign"), handle,
      ops::Const(root, Tensor::FromVector<float>({1, 2, 3}, TensorShape({3})), DT_FLOAT));
  const Output read = ops::ReadVariableOp(root.WithOpName("read"), handle, DT_FLOAT);
  const Output initialized = ops::VarIsInitializedOp(root.WithOpName("initialized"), handle);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), graph));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> before, session->Run({}, {initialized.name()}));
  EXPECT_FALSE(before[0].scalar<bool>());
  ASSERT_OK(session->Run({}, {}, {assign.name()}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> after,
                       session->Run({}, {read.name(), initialized.name()}));
  EXPECT_THAT(Values<float>(after[0]), ::testing::ElementsAre(1, 2, 3));
  EXPECT_TRUE(after[1].scalar<bool>());
}

}  // namespace
}  // namespace rill
