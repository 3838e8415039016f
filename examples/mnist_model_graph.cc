// Builds the seed MNIST model with the C++ API and prints its graph
// summary: what a user sees before placing and running it.
#include <cstdio>

#include "cli/flags.h"
#include "examples/mnist_model.h"
#include "fmt/core.h"
#include "graph/graph_summary.h"

int main(int argc, char** argv) {
  using namespace rill;
  constexpr char kUsage[] = "usage: mnist_model_graph   (no arguments)\n";
  const absl::StatusOr<cli::ParsedArgs> parsed =
      cli::ParseOptionsOnly({argv + 1, argv + argc}, {}, {});
  if (!parsed.ok()) return cli::PrintUsageError("mnist_model_graph", parsed.status(), kUsage);
  if (parsed->help) return cli::PrintHelp(kUsage);
  const Scope root = ops::NewRootScope();
  const examples::MnistModel model = examples::BuildMnistModel(root);
  const auto def = root.ToGraphDef();
  if (!def.ok()) {
    fmt::print(stderr, "building the model failed: {}\n", std::string(def.status().message()));
    return 1;
  }
  fmt::print("== MNIST model (784-100-10) built with the C++ API\n");
  fmt::print("{}", FormatGraphSummary(SummarizeGraph(*root.graph())));
  fmt::print("output {}: {} {}\n", model.y.name(), DataTypeString(model.y.type()),
             model.y.shape().DebugString());
  fmt::print("loss {}: {} {}\n", model.cross_entropy.name(),
             DataTypeString(model.cross_entropy.type()), model.cross_entropy.shape().DebugString());
  return 0;
}
