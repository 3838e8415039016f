// The training graphs placed for GPUs this machine need not have: every
// node whose op TensorFlow runs on a GPU lands on one, without soft
// placement, on one GPU, on another, and on GPU workers of a cluster.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "examples/distributed_mnist_flags.h"
#include "examples/distributed_mnist_graph.h"
#include "examples/fashion_mlp_model.h"
#include "examples/mnist_model.h"
#include "graph/device_spec.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "ops/uninitialized_variables.h"
#include "placement/device_set.h"
#include "placement/placer.h"
#include "runtime/distributed/cluster_spec.h"
#include "tests/test_util.h"

namespace rill {
namespace {

// Ops TensorFlow registers no GPU kernel for: checkpoints, summaries, and
// the queues and accumulators of synchronous training, which live on a ps
// beside the global step.
const std::set<std::string>& CpuOnlyOps() {
  static const auto* ops = new std::set<std::string>{
      "SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename", "StringJoin", "ScalarSummary",
      "HistogramSummary", "MergeSummary", "FIFOQueueV2", "QueueEnqueueV2", "QueueEnqueueManyV2",
      "QueueDequeueV2", "QueueDequeueManyV2", "QueueSizeV2", "QueueCloseV2",
      "ConditionalAccumulator", "AccumulatorApplyGradient", "AccumulatorTakeGradient",
      "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated",
      // rill's clocks of bounded staleness,
      // beside the global step.
      "WorkerClocks", "WorkerClocksTick", "WorkerClocksRetire", "WorkerClocksState"};
  return *ops;
}

// Whether `node` may run on a CPU wherever it is: it asks for one, its op
// has no GPU kernel in TensorFlow, or it has no kernel at all (Placeholder:
// fed), which goes where it asks.
bool MayStayOnCpu(const Node& node) {
  const absl::StatusOr<DeviceSpec> requested = DeviceSpec::Parse(node.requested_device());
  return (requested.ok() && requested->type == "CPU") || CpuOnlyOps().count(node.op()) > 0 ||
         StandardKernels().DeviceTypesFor(node.op()).empty();
}

// Places `def` and checks every node that does not ask for a CPU, whose op
// runs on GPUs and whose task has a GPU, is on a GPU. Returns the number of
// nodes on GPUs.
int PlaceAndCheck(const GraphDef& def, const DeviceSet& devices, const std::string& client) {
  auto graph = ImportGraphDef(def, StandardOps());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return 0;
  // Every op and type lacking a GPU kernel at once, before the placer
  // stops at the first.
  std::set<std::string> missing;
  for (const Node* node : (*graph)->nodes()) {
    if (MayStayOnCpu(*node) || StandardKernels().HasKernel(node->def(), kDeviceGpu)) continue;
    std::string types;
    for (const auto& [name, value] : node->def().attr()) {
      if (value.value_case() == AttrValue::kType) {
        types += " " + name + "=" + DataTypeString(value.type());
      }
    }
    missing.insert(node->op() + types);
  }
  EXPECT_TRUE(missing.empty()) << "no GPU kernel for:\n  " << absl::StrJoin(missing, "\n  ");
  PlacerOptions options;
  options.default_device = client;
  const absl::StatusOr<Placement> placement = PlaceGraph(**graph, devices, options);
  EXPECT_TRUE(placement.ok()) << placement.status();
  if (!placement.ok()) return 0;
  std::set<std::string> tasks_with_gpus;
  for (const DeviceSpec& spec : devices.specs()) {
    if (spec.type == "GPU") tasks_with_gpus.insert(*spec.job + "/" + std::to_string(*spec.task));
  }
  int on_gpu = 0;
  for (const Node* node : (*graph)->nodes()) {
    const DeviceSpec placed = DeviceSpec::Parse(placement->device(*node)).value();
    if (placed.type == "GPU") {
      ++on_gpu;
      continue;
    }
    if (MayStayOnCpu(*node) ||
        tasks_with_gpus.count(*placed.job + "/" + std::to_string(*placed.task)) == 0) {
      continue;
    }
    ADD_FAILURE() << "'" << node->name() << "' (" << node->op() << ") is on "
                  << placement->device(*node) << ": " << placement->nodes[node->id()].reason;
  }
  return on_gpu;
}

constexpr char kLocalGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";

// The local devices: one CPU and `gpus` GPUs.
DeviceSet Local(int gpus) { return DeviceSet::Local(1, gpus); }

GraphDef Built(const Scope& root) {
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_TRUE(def.ok()) << def.status();
  return def.ok() ? *def : GraphDef();
}

TEST(GpuPlacement, FashionModelsWithAdamOnOneGpuAndOnTheSecond) {
  for (const char* model : {"mlp", "cnn"}) {
    for (const int gpu : {0, 1}) {
      SCOPED_TRACE(std::string(model) + " on /gpu:" + std::to_string(gpu));
      const Scope root = ops::NewRootScope().WithDevice("/device:GPU:" + std::to_string(gpu));
      const absl::StatusOr<examples::FashionModel> built = std::string(model) == "cnn"
                                                               ? examples::BuildFashionCnn(root)
                                                               : examples::BuildFashionMlp(root);
      ASSERT_TRUE(built.ok()) << built.status();
      const GraphDef def = Built(root);
      EXPECT_EQ(PlaceAndCheck(def, Local(2), kLocalGpu0), def.node_size());
    }
  }
}

// The seeds' model pins its variables to the ps and its math to the
// worker without a device type: with a GPU there, the math prefers it.
TEST(GpuPlacement, TheSeedsMnistModelOnAGpuWorker) {
  const Scope root = ops::NewRootScope();
  examples::BuildMnistModel(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_OK_AND_ASSIGN(const DeviceSet devices,
                       DeviceSet::Create({"/job:ps/replica:0/task:0/device:CPU:0",
                                          "/job:worker/replica:0/task:0/device:CPU:0",
                                          "/job:worker/replica:0/task:0/device:GPU:0"}));
  EXPECT_GT(PlaceAndCheck(Built(root), devices, "/job:worker/task:0"), 0);
}

// distributed_mnist --device gpu on 1 ps + 2 GPU workers: each worker's
// graph, in every training mode and for both models.
TEST(GpuPlacement, DistributedMnistOnTwoGpuWorkers) {
  ASSERT_OK_AND_ASSIGN(
      const DeviceSet devices,
      DeviceSet::Create(
          {"/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0",
           "/job:worker/replica:0/task:0/device:GPU:0", "/job:worker/replica:0/task:1/device:CPU:0",
           "/job:worker/replica:0/task:1/device:GPU:0"}));
  for (const std::vector<std::string>& mode :
       std::vector<std::vector<std::string>>{{}, {"--issync=1"}, {"--staleness=1"}}) {
    for (const char* model : {"mlp", "cnn"}) {
      for (const int task : {0, 1}) {
        std::vector<std::string> args = mode;
        args.push_back(std::string("--model=") + model);
        args.push_back("--device=gpu");
        SCOPED_TRACE(::testing::PrintToString(args) + " task " + std::to_string(task));
        ASSERT_OK_AND_ASSIGN(const examples::Flags flags, examples::ParseFlags(args));
        ASSERT_OK_AND_ASSIGN(
            const ServerConfig config,
            ServerConfigFromFlags(
                {{"ps_hosts", "127.0.0.1:1"},
                 {"worker_hosts", "127.0.0.1:2,127.0.0.1:3"},
                 {"job_name", "worker"},
                 {"task_index", std::to_string(task)},
                 {"issync", mode == std::vector<std::string>{"--issync=1"} ? "1" : "0"}}));
        ASSERT_OK_AND_ASSIGN(const examples::DistributedMnistGraph graph,
                             examples::BuildDistributedMnistGraph(flags, config));
        EXPECT_GT(PlaceAndCheck(graph.def, devices, "/job:worker/task:" + std::to_string(task)), 0);
      }
    }
  }
}

// Every initializer TensorFlow's GPU kernels take (each value type, int32
// and int64 shapes), the readiness report over reference and resource
// variables, and the gradient helpers, all under /gpu:0.
TEST(GpuPlacement, InitializersReadinessAndGradientHelpersOnAGpu) {
  const Scope root = ops::NewRootScope().WithDevice("/device:GPU:0");
  std::vector<Output> variables;
  for (const DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16}) {
    for (const bool wide_shape : {false, true}) {
      const ops::Input shape = wide_shape ? ops::Input(Tensor::FromVector<int64_t>({2, 3}, {2}))
                                          : ops::Input(Tensor::FromVector<int32_t>({2, 3}, {2}));
      ops::RandomUniform(root, shape, dtype);
      ops::RandomStandardNormal(root, shape, dtype);
      ops::TruncatedNormal(root, shape, dtype);
    }
  }
  const Variable ref(root, "ref", ops::Input(Tensor::FromVector<float>({1, 2}, {2})));
  const ops::VarHandleOp handle(root.WithOpName("handle"), DT_FLOAT, PartialTensorShape({2}));
  ops::AssignVariableOp(root, handle, ops::Input(Tensor::FromVector<float>({3, 4}, {2})));
  ASSERT_OK(ReportUninitializedVariables(root, std::vector<Output>{ref.ref(), handle}).status());
  // What the gradient of a mean or of a reduction over some axes builds.
  const ops::Identity data(root, Tensor::FromVector<float>({1, 2, 3, 4}, {4}));
  ops::DynamicStitch(root,
                     {ops::Input(Tensor::FromVector<int32_t>({0, 1}, {2})),
                      ops::Input(Tensor::FromVector<int32_t>({2, 3}, {2}))},
                     {ops::Input(Tensor::FromVector<float>({1, 2}, {2})),
                      ops::Input(Tensor::FromVector<float>({3, 4}, {2}))});
  const ops::Greater mask(root, data, 2.f);
  const ops::Where where(root, mask);
  ops::GatherV2(root, data, ops::Squeeze(root, where), 0);
  ASSERT_TRUE(root.ok()) << root.status();
  const GraphDef def = Built(root);
  PlaceAndCheck(def, Local(1), kLocalGpu0);
}

}  // namespace
}  // namespace rill
