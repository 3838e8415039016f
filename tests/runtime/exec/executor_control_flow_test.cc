// TensorFlow's common_runtime/executor_test.cc cases on control flow and
// dead values, with its expected values: a Switch's live and dead outputs
// through _Send, a step aborted while its _Recvs wait, a graph with no
// inputs, and the lowered while loops of its BM_LoweredWhileLoop and
// BM_LoweredWhileLoopWithTransfer benchmarks run as tests. Plus
// kernels/control_flow_ops_test.cc's AbortOpTest cases, where rill differs
// from TensorFlow on purpose (see there). Graphs are built with Scope and
// NodeBuilder and run by one Executor with a LocalRendezvous, as
// TensorFlow's tests run theirs.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "graph/attr_value_util.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/device/device_factory.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/local_rendezvous.h"
#include "tests/test_util.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

// TensorFlow's two ends of every transfer in these tests.
constexpr char kAlice[] = "/job:j/replica:0/task:0/cpu:0";
constexpr char kBob[] = "/job:j/replica:0/task:0/device:GPU:0";
constexpr int64_t kIncarnation = 1;

// test::graph::Recv: a _Recv of `name` sent from `sender` to `receiver`.
Output Recv(const Scope& scope, const std::string& name, DataType type, const std::string& sender,
            const std::string& receiver) {
  const Operation op = NodeBuilder(scope.WithOpName("Recv"), "_Recv")
                           .Attr("tensor_type", MakeAttr(type))
                           .Attr("tensor_name", MakeAttr(name))
                           .Attr("send_device", MakeAttr(sender))
                           .Attr("send_device_incarnation", MakeAttr(kIncarnation))
                           .Attr("recv_device", MakeAttr(receiver))
                           .Finalize();
  return Output(op, 0);
}

// test::graph::Send.
Operation Send(const Scope& scope, const Output& input, const std::string& name,
               const std::string& sender, const std::string& receiver) {
  return NodeBuilder(scope.WithOpName("Send"), "_Send")
      .Input(input)
      .Attr("tensor_name", MakeAttr(name))
      .Attr("send_device", MakeAttr(sender))
      .Attr("send_device_incarnation", MakeAttr(kIncarnation))
      .Attr("recv_device", MakeAttr(receiver))
      .Finalize();
}

// The rendezvous key of `name` from `sender` to `receiver` in the root
// frame (TensorFlow's Key()).
PreparedRendezvousKey Key(const std::string& sender, const std::string& receiver,
                          const std::string& name) {
  RendezvousKey key;
  key.src_device = sender;
  key.src_incarnation = kIncarnation;
  key.dst_device = receiver;
  key.tensor_name = name;
  absl::StatusOr<PreparedRendezvousKey> prepared = PreparedRendezvousKey::Prepare(key);
  EXPECT_OK(prepared);
  return prepared.ok() ? *std::move(prepared) : PreparedRendezvousKey();
}

// What a receive got: the status, the value, and whether it was dead (an
// empty tensor, as _Send leaves a dead value).
struct Received {
  absl::Status status;
  Tensor value;
  bool is_dead = false;
};

Received RecvNow(Rendezvous& rendezvous, const PreparedRendezvousKey& key) {
  Received received;
  absl::Notification done;
  rendezvous.RecvAsync(key, [&](const absl::Status& status, const Tensor& value) {
    received.status = status;
    received.value = value;
    received.is_dead = status.ok() && !value.IsInitialized();
    done.Notify();
  });
  done.WaitForNotification();
  return received;
}

class ExecutorControlFlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = CreateDevices("/job:localhost/replica:0/task:0", {{"CPU", 1}}, 1);
    ASSERT_OK(devices);
    devices_ = *std::move(devices);
  }

  // Builds the executor of what `root_` holds, fetching `fetches`.
  absl::Status Create(const std::vector<Output>& fetches = {}) {
    ASSIGN_OR_RETURN(GraphDef def, root_.ToGraphDef());
    return CreateFrom(def, fetches);
  }

  absl::Status CreateFrom(const GraphDef& def, const std::vector<Output>& fetches = {},
                          bool fuse_loops = true) {
    ASSIGN_OR_RETURN(graph_, ImportGraphDef(def, StandardOps()));
    Executor::Params params;
    params.graph = graph_.get();
    params.device = devices_.front().get();
    params.inter_op_pool = &pool_;
    params.fuse_loops = fuse_loops;
    for (const Output& fetch : fetches) {
      params.fetches.push_back(
          TensorEndpoint{graph_->FindNode(fetch.node()->name()), fetch.index()});
    }
    ASSIGN_OR_RETURN(executor_, Executor::Create(params));
    return absl::OkStatus();
  }

  absl::Status Run(Rendezvous* rendezvous, std::vector<Tensor>* fetched = nullptr) {
    Executor::Args args;
    args.rendezvous = rendezvous;
    std::vector<Tensor> ignored;
    return executor_->Run(args, fetched == nullptr ? &ignored : fetched);
  }

  Scope root_ = ops::NewRootScope();
  std::vector<std::unique_ptr<Device>> devices_;
  Eigen::ThreadPool pool_{2, /*allow_spinning=*/false};
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Executor> executor_;
};

// TF: ExecutorTest.SimpleSwitchLive. A false predicate sends the data to
// output_false, which the _Send carries alive.
TEST_F(ExecutorControlFlowTest, SimpleSwitchLive) {
  const Output in0 = Recv(root_, "a", DT_FLOAT, kAlice, kBob);
  const Output in1 = ops::Const(root_, Tensor::Scalar<bool>(false), DT_BOOL);
  const ops::Switch tmp(root_, in0, in1);
  Send(root_, tmp.output_false, "c", kBob, kAlice);
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  ASSERT_OK(rendezvous.Send(Key(kAlice, kBob, "a"), Tensor::Scalar<float>(1.0)));
  ASSERT_OK(Run(&rendezvous));
  const Received out = RecvNow(rendezvous, Key(kBob, kAlice, "c"));
  ASSERT_OK(out.status);
  EXPECT_FALSE(out.is_dead);
  EXPECT_EQ(out.value.scalar<float>(), 1.0f);
}

// TF: ExecutorTest.SimpleSwitchDead. A true predicate leaves output_false
// dead: the step succeeds and the _Send delivers the deadness.
TEST_F(ExecutorControlFlowTest, SimpleSwitchDead) {
  const Output in0 = Recv(root_, "a", DT_FLOAT, kAlice, kBob);
  const Output in1 = ops::Const(root_, Tensor::Scalar<bool>(true), DT_BOOL);
  const ops::Switch tmp(root_, in0, in1);
  Send(root_, tmp.output_false, "c", kBob, kAlice);
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  ASSERT_OK(rendezvous.Send(Key(kAlice, kBob, "a"), Tensor::Scalar<float>(1.0)));
  ASSERT_OK(Run(&rendezvous));
  const Received out = RecvNow(rendezvous, Key(kBob, kAlice, "c"));
  ASSERT_OK(out.status);
  EXPECT_TRUE(out.is_dead);
}

// As TensorFlow's executor: a ControlTrigger runs, live, after a dead
// input (a loop's gradient orders its stack pushes through one), where
// another node waiting on the same dead value is dead.
TEST_F(ExecutorControlFlowTest, ControlTriggerIsLiveAfterADeadInput) {
  const Output in0 = Recv(root_, "a", DT_FLOAT, kAlice, kBob);
  const ops::Switch tmp(root_, in0, ops::Const(root_, Tensor::Scalar<bool>(true), DT_BOOL));
  const Output dead = ops::Identity(root_, tmp.output_false);
  const Operation trigger =
      NodeBuilder(root_.WithControlDependencies({dead.op()}), "ControlTrigger").Finalize();
  const Operation no_op =
      NodeBuilder(root_.WithControlDependencies({dead.op()}), "NoOp").Finalize();
  Send(root_,
       ops::Const(root_.WithControlDependencies({trigger}), Tensor::Scalar<float>(2), DT_FLOAT),
       "after_trigger", kBob, kAlice);
  Send(root_,
       ops::Const(root_.WithControlDependencies({no_op}), Tensor::Scalar<float>(3), DT_FLOAT),
       "after_no_op", kBob, kAlice);
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  ASSERT_OK(rendezvous.Send(Key(kAlice, kBob, "a"), Tensor::Scalar<float>(1.0)));
  ASSERT_OK(Run(&rendezvous));
  const Received live = RecvNow(rendezvous, Key(kBob, kAlice, "after_trigger"));
  ASSERT_OK(live.status);
  EXPECT_FALSE(live.is_dead);
  EXPECT_EQ(live.value.scalar<float>(), 2.0f);
  const Received dead_out = RecvNow(rendezvous, Key(kBob, kAlice, "after_no_op"));
  ASSERT_OK(dead_out.status);
  EXPECT_TRUE(dead_out.is_dead);
}

// TF: ExecutorTest.Abort. e = a + b + c + d waits for four receives; three
// arrive and the rendezvous is aborted: the step ends ABORTED, and a later
// receive fails with the abort. TensorFlow sends from closures after a
// 100 ms sleep; here the step is started first and the test thread sends
// and aborts while it waits, which needs no sleep.
TEST_F(ExecutorControlFlowTest, Abort) {
  const Output in0 = Recv(root_, "a", DT_FLOAT, kAlice, kBob);
  const Output in1 = Recv(root_, "b", DT_FLOAT, kAlice, kBob);
  const Output in2 = Recv(root_, "c", DT_FLOAT, kAlice, kBob);
  const Output in3 = Recv(root_, "d", DT_FLOAT, kAlice, kBob);
  const Output add0 = ops::Add(root_, in0, in1);
  const Output add1 = ops::Add(root_, in2, in3);
  const Output add2 = ops::Add(root_, add0, add1);
  Send(root_, add2, "e", kBob, kAlice);
  ASSERT_OK(Create());

  LocalRendezvous rendezvous;
  Executor::Args args;
  args.rendezvous = &rendezvous;
  std::vector<Tensor> fetched;
  absl::Status step;
  absl::Notification finished;
  executor_->RunAsync(args, &fetched, [&](absl::Status status) {
    step = std::move(status);
    finished.Notify();
  });
  for (const char* name : {"a", "b", "c"}) {
    EXPECT_OK(rendezvous.Send(Key(kAlice, kBob, name), Tensor::Scalar<float>(1.0)));
  }
  rendezvous.StartAbort(absl::AbortedError(""));
  finished.WaitForNotification();
  EXPECT_THAT(step, StatusIs(absl::StatusCode::kAborted, ::testing::_));
  EXPECT_THAT(RecvNow(rendezvous, Key(kBob, kAlice, "c")).status,
              StatusIs(absl::StatusCode::kAborted, ::testing::_));
}

// TF: ExecutorTest.NoInputTensors. A graph whose only node has no inputs
// (and nothing fetched) runs to completion.
TEST_F(ExecutorControlFlowTest, NoInputTensors) {
  ops::Const(root_, Tensor::Scalar<float>(1.0), DT_FLOAT);
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  ASSERT_OK(Run(&rendezvous));
}

// TF: BM_WhileLoopHelper's graph, lowered: `loop_vars` int32 variables
// from 0; while x <= loop_iters: x += 1, the others through Relu;
// parallel_iterations 20. TensorFlow builds a functional While and lowers
// it; ops::WhileLoop builds the same primitives. Returns what C (an
// Identity of the first output, after the loop) is fetched from.
absl::StatusOr<Output> BuildLoweredWhileLoop(const Scope& root, int loop_iters, int loop_vars) {
  const Output a = ops::Const(root.WithOpName("A"), Tensor::Scalar<int32_t>(0), DT_INT32);
  const std::vector<Output> inputs(loop_vars, a);
  std::vector<Output> outputs;
  RETURN_IF_ERROR(ops::WhileLoop(
      root, inputs,
      [loop_iters](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::LessEqual(s, in[0], loop_iters);
        return s.status();
      },
      [](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], 1));
        for (size_t i = 1; i < in.size(); ++i) out->push_back(ops::Relu(s, in[i]));
        return s.status();
      },
      &outputs, {.frame_name = "while", .parallel_iterations = 20}));
  return static_cast<Output>(ops::Identity(
      root.WithOpName("C").WithControlDependencies(std::vector<Operation>{outputs[0].op()}),
      outputs[0]));
}

// BM_WhileLoopHelper's `transfer`: each edge from the LoopCond to a Switch
// goes through a _Send/_Recv pair (named "c<k>"), as a loop whose
// predicate lives on another device; the _Recv also waits for the LoopCond
// by a control edge, so that it stays in the loop's frame.
GraphDef WithLoopCondTransfers(GraphDef def) {
  std::vector<std::string> loop_conds;
  for (const NodeDef& node : def.node()) {
    if (node.op() == "LoopCond") loop_conds.push_back(node.name());
  }
  std::vector<NodeDef> added;
  int k = 0;
  for (NodeDef& node : *def.mutable_node()) {
    if (node.op() != "Switch") continue;
    for (const std::string& loop_cond : loop_conds) {
      if (node.input(1) != loop_cond) continue;
      const std::string tensor = absl::StrCat("c", k++);
      NodeDef send;
      send.set_name(tensor + "/_Send");
      send.set_op("_Send");
      send.add_input(loop_cond);
      NodeDef recv;
      recv.set_name(tensor + "/_Recv");
      recv.set_op("_Recv");
      recv.add_input("^" + loop_cond);
      (*send.mutable_attr())["T"] = MakeAttr(DT_BOOL);
      (*recv.mutable_attr())["tensor_type"] = MakeAttr(DT_BOOL);
      for (NodeDef* end : {&send, &recv}) {
        auto& attr = *end->mutable_attr();
        attr["tensor_name"] = MakeAttr(tensor);
        attr["send_device"] = MakeAttr(kBob);
        attr["send_device_incarnation"] = MakeAttr(kIncarnation);
        attr["recv_device"] = MakeAttr(kAlice);
      }
      node.set_input(1, recv.name());
      added.push_back(std::move(send));
      added.push_back(std::move(recv));
    }
  }
  for (NodeDef& node : added) *def.add_node() = std::move(node);
  return def;
}

// TensorFlow's ArgPairs (loop_iters, loop_vars) for BM_LoweredWhileLoop.
constexpr std::pair<int, int> kLoweredWhileLoopArgs[] = {
    {0, 1},   {1, 1},   {10, 1},   {100, 1},   {1000, 1},
    {0, 100}, {1, 100}, {10, 100}, {100, 100}, {1000, 100}};

// TF: BM_LoweredWhileLoop, run once per argument pair and checked: the
// counter leaves the loop at loop_iters + 1, every other variable at
// Relu(0) = 0. Both ways a loop runs: fused into one program, and frame by
// frame.
TEST_F(ExecutorControlFlowTest, LoweredWhileLoop) {
  for (const bool fuse_loops : {true, false}) {
    for (const auto& [loop_iters, loop_vars] : kLoweredWhileLoopArgs) {
      root_ = ops::NewRootScope();
      ASSERT_OK_AND_ASSIGN(const Output c, BuildLoweredWhileLoop(root_, loop_iters, loop_vars));
      ASSERT_OK_AND_ASSIGN(const GraphDef def, root_.ToGraphDef());
      ASSERT_OK(CreateFrom(def, {c}, fuse_loops));
      for (int step = 0; step < 2; ++step) {
        LocalRendezvous rendezvous;
        std::vector<Tensor> fetched;
        ASSERT_OK(Run(&rendezvous, &fetched));
        EXPECT_EQ(fetched[0].scalar<int32_t>(), loop_iters + 1)
            << loop_iters << " iterations, " << loop_vars << " variables, step " << step
            << (fuse_loops ? ", fused" : ", frame by frame");
      }
    }
  }
}

// TF: BM_LoweredWhileLoopWithTransfer, with its (loop_iters, loop_vars)
// pairs up to 100 variables (its 5000-variable pairs are a benchmark's
// load, not a different case): every Switch reads the predicate through a
// _Send/_Recv pair inside the frame, keyed by frame and iteration.
TEST_F(ExecutorControlFlowTest, LoweredWhileLoopWithTransfer) {
  constexpr std::pair<int, int> kArgs[] = {{0, 100}, {1, 100}, {10, 100}, {100, 100}, {1000, 100},
                                           {0, 1},   {1, 1},   {10, 1},   {1000, 1}};
  for (const auto& [loop_iters, loop_vars] : kArgs) {
    root_ = ops::NewRootScope();
    ASSERT_OK_AND_ASSIGN(const Output c, BuildLoweredWhileLoop(root_, loop_iters, loop_vars));
    ASSERT_OK_AND_ASSIGN(const GraphDef def, root_.ToGraphDef());
    const GraphDef transferred = WithLoopCondTransfers(def);
    ASSERT_EQ(transferred.node_size(), def.node_size() + 2 * loop_vars);
    ASSERT_OK(CreateFrom(transferred, {c}));
    for (int step = 0; step < 2; ++step) {
      LocalRendezvous rendezvous;
      std::vector<Tensor> fetched;
      ASSERT_OK(Run(&rendezvous, &fetched));
      EXPECT_EQ(fetched[0].scalar<int32_t>(), loop_iters + 1)
          << loop_iters << " iterations, " << loop_vars << " variables, step " << step;
    }
  }
}

// TF: AbortOpTest.pass_error_msg (kernels/control_flow_ops_test.cc).
// TensorFlow's Abort kills the process with SIGABRT ("Abort_op intentional
// failure; abort_op_test"). rill's ends the step with ABORTED instead: a
// server runs other clients' steps and must stay up.
TEST_F(ExecutorControlFlowTest, AbortOpPassErrorMsg) {
  ops::Abort(root_.WithOpName("abort_op"), ops::Abort::ErrorMsg("abort_op_test"));
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  const absl::Status status = Run(&rendezvous);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kAborted, HasSubstr("node 'abort_op' (Abort)")));
  EXPECT_THAT(status.message(), HasSubstr("Abort op: abort_op_test"));
}

// TF: AbortOpTest.default_msg; as above, with the empty default message.
TEST_F(ExecutorControlFlowTest, AbortOpDefaultMsg) {
  ops::Abort(root_.WithOpName("abort_op"));
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  EXPECT_THAT(Run(&rendezvous), StatusIs(absl::StatusCode::kAborted, HasSubstr("Abort op: ")));
}

// TF: AbortOpTest.exit_normally. TensorFlow exits the process with code 0;
// rill ends the step quietly with OUT_OF_RANGE, the stop signal input
// pipelines use, and the process stays up.
TEST_F(ExecutorControlFlowTest, AbortOpExitNormally) {
  ops::Abort(root_.WithOpName("abort_op"), ops::Abort::ExitWithoutError(true));
  ASSERT_OK(Create());
  LocalRendezvous rendezvous;
  EXPECT_THAT(Run(&rendezvous), StatusIs(absl::StatusCode::kOutOfRange, ::testing::_));
}

}  // namespace
}  // namespace rill
