// One graph, one session API, two ways to run it: in this process over
// three CPU devices, and on a cluster of 1 ps + 2 workers (servers in this
// process, two CPUs each) with the variables on the ps's second CPU and
// the prediction on worker 1's. Both train a linear regression on
// y = 2x + 10 and must end with the same weights; a traced step shows
// which device ran what.
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"

namespace rill::examples {
namespace {

constexpr int kPoints = 64;
constexpr int kSteps = 200;

// `ps`, `worker0` and `worker1` are where the three parts of the model go.
absl::StatusOr<GraphDef> Regression(const std::string& ps, const std::string& worker0,
                                    const std::string& worker1) {
  const Scope root = ops::NewRootScope();
  const Scope on_worker0 = root.WithDevice(worker0);
  const Output x = ops::Placeholder(on_worker0.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(on_worker0.WithOpName("y"), DT_FLOAT);
  const Variable w(root.WithDevice(ps), "w", 0.f);
  const Variable b(root.WithDevice(ps), "b", 0.f);
  const Output prediction =
      ops::Add(root.WithDevice(worker1).WithOpName("prediction"), ops::Mul(root, x, w), b);
  const Output loss = ops::Mean(on_worker0.WithOpName("loss"),
                                ops::Square(on_worker0, ops::Sub(on_worker0, prediction, y)), 0);
  GradientDescentOptimizer optimizer(0.1);
  RETURN_IF_ERROR(optimizer.Minimize(root, loss, {w, b}, nullptr, "train").status());
  GlobalVariablesInitializer(root);
  return root.ToGraphDef();
}

// Trains and returns {w, b}; prints a traced step's node count per device.
absl::StatusOr<std::vector<float>> Train(Session& session, const std::string& label) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> xs(kPoints), ys(kPoints);
  for (int i = 0; i < kPoints; ++i) {
    xs[i] = uniform(rng);
    ys[i] = 2.f * xs[i] + 10.f;
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>(xs, TensorShape({kPoints}))},
      {"y", Tensor::FromVector<float>(ys, TensorShape({kPoints}))}};
  RETURN_IF_ERROR(session.Run({}, {}, {"init"}).status());
  for (int step = 0; step < kSteps; ++step) {
    RETURN_IF_ERROR(session.Run(feeds, {}, {"train"}).status());
  }
  RunOptions traced;
  traced.trace = true;
  RunMetadata metadata;
  RETURN_IF_ERROR(session.Run(traced, feeds, {"loss"}, {"train"}, &metadata).status());
  std::map<std::string, int> per_device;
  for (const NodeExecStats& node : metadata.step_stats) ++per_device[node.device];
  fmt::print("{}: one traced step ran\n", label);
  for (const auto& [device, nodes] : per_device) fmt::print("  {:3} nodes on {}\n", nodes, device);
  ASSIGN_OR_RETURN(std::vector<Tensor> values, session.Run({}, {"w", "b"}));
  return std::vector<float>{values[0].scalar<float>(), values[1].scalar<float>()};
}

absl::Status Run() {
  SessionOptions local;
  local.device_count = {{"CPU", 3}};
  ASSIGN_OR_RETURN(const GraphDef local_graph,
                   Regression("/device:CPU:1", "/device:CPU:0", "/device:CPU:2"));
  ASSIGN_OR_RETURN(auto local_session, NewSession(local, local_graph));
  ASSIGN_OR_RETURN(const std::vector<float> local_wb, Train(*local_session, "local session"));

  ServerOptions server;
  server.device_count = {{"CPU", 2}};
  server.log = LogSink::Discard();  // Start-up lines would drown the output.
  ASSIGN_OR_RETURN(auto cluster, Server::CreateLocalCluster({{"worker", 2}, {"ps", 1}}, server));
  SessionOptions remote;
  remote.target = cluster[0]->target();  // Worker 0's master.
  remote.log_device_placement = true;
  std::FILE* placement = std::tmpfile();
  FileLogSink placement_sink(placement);
  remote.log = &placement_sink;
  ASSIGN_OR_RETURN(const GraphDef cluster_graph,
                   Regression("/job:ps/task:0/device:CPU:1", "/job:worker/task:0",
                              "/job:worker/task:1/device:CPU:1"));
  ASSIGN_OR_RETURN(auto cluster_session, NewSession(remote, cluster_graph));
  ASSIGN_OR_RETURN(const std::vector<float> cluster_wb, Train(*cluster_session, "cluster"));
  // The client sees where the master placed each node (once per plan).
  std::rewind(placement);
  std::set<std::string> shown;
  char line[512];
  while (std::fgets(line, sizeof(line), placement) != nullptr) {
    const std::string text(line);
    if ((text.starts_with("w: ") || text.starts_with("prediction: ")) &&
        shown.insert(text).second) {
      fmt::print("  {}", text);
    }
  }
  fmt::print("result: {{\"w\": {}, \"b\": {}, \"local_w\": {}, \"local_b\": {}, \"steps\": {}}}\n",
             cluster_wb[0], cluster_wb[1], local_wb[0], local_wb[1], kSteps);
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  constexpr char kUsage[] = "usage: cluster_devices   (no arguments)\n";
  const absl::StatusOr<rill::cli::ParsedArgs> parsed =
      rill::cli::ParseOptionsOnly({argv + 1, argv + argc}, {}, {});
  if (!parsed.ok()) return rill::cli::PrintUsageError("cluster_devices", parsed.status(), kUsage);
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  const absl::Status status = rill::examples::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "cluster_devices: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
