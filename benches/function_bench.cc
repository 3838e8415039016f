// Functions: a step of a graph of nested calls against the same graph
// written inline (calls are inlined once, at load), and the time a graph
// with a large library takes to load and run its first step.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "graph/attr_value_util.h"
#include "graph/proto/graph.pb.h"
#include "graph/tensor_proto_util.h"
#include "runtime/session.h"

namespace rill {
namespace {

NodeDef* AddNode(GraphDef* graph, const std::string& name, const std::string& op,
                 std::vector<std::string> inputs) {
  NodeDef* node = graph->add_node();
  node->set_name(name);
  node->set_op(op);
  for (std::string& input : inputs) node->add_input(std::move(input));
  return node;
}

NodeDef* AddBodyNode(FunctionDef* function, const std::string& name, const std::string& op,
                     std::vector<std::string> inputs) {
  NodeDef* node = function->add_node_def();
  node->set_name(name);
  node->set_op(op);
  for (std::string& input : inputs) node->add_input(std::move(input));
  return node;
}

void Placeholder(GraphDef* graph) {
  (*AddNode(graph, "x", "Placeholder", {})->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
}

// f_k(x) = f_{k-1}(x) + x, f_0(x) = x + x, called as f_{depth-1}: `depth`
// nested calls and as many AddV2s.
GraphDef NestedCalls(int depth) {
  GraphDef graph;
  Placeholder(&graph);
  for (int k = 0; k < depth; ++k) {
    FunctionDef* f = graph.mutable_library()->add_function();
    f->mutable_signature()->set_name(absl::StrCat("f_", k));
    OpDef::ArgDef* in = f->mutable_signature()->add_input_arg();
    in->set_name("x");
    in->set_type(DT_FLOAT);
    OpDef::ArgDef* out = f->mutable_signature()->add_output_arg();
    out->set_name("y");
    out->set_type(DT_FLOAT);
    std::string inner = "x";
    if (k > 0) {
      AddBodyNode(f, "inner", absl::StrCat("f_", k - 1), {"x"});
      inner = "inner:y:0";
    }
    (*AddBodyNode(f, "sum", "AddV2", {inner, "x"})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    (*f->mutable_ret())["y"] = "sum:z:0";
  }
  AddNode(&graph, "y", absl::StrCat("f_", depth - 1), {"x"});
  return graph;
}

// The same AddV2s written inline: named sum_k, or (`inlined_names`) as the
// inliner names them ("y/inner/.../sum", up to 6 KB for depth 1,000), to
// tell what the calls cost from what long names cost.
std::string ChainNodeName(int k, int depth, bool inlined_names) {
  if (k + 1 == depth) return absl::StrCat("y");
  if (!inlined_names) return absl::StrCat("sum_", k);
  std::string inner;
  for (int j = k + 1; j < depth; ++j) absl::StrAppend(&inner, "inner/");
  return absl::StrCat("y/", inner, "sum");
}

GraphDef InlineChain(int depth, bool inlined_names) {
  GraphDef graph;
  Placeholder(&graph);
  std::string last = "x";
  for (int k = 0; k < depth; ++k) {
    std::string name = ChainNodeName(k, depth, inlined_names);
    (*AddNode(&graph, name, "AddV2", {last, "x"})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    last = std::move(name);
  }
  return graph;
}

void RunSteps(benchmark::State& state, const GraphDef& graph) {
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), graph);
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::Scalar<float>(1)}};
  // The first step builds the plan (pruning, placement, executors): timed
  // by BM_LoadLibraryAndRun, not here.
  if (absl::Status first = (*session)->Run(feeds, {"y"}).status(); !first.ok()) {
    state.SkipWithError(std::string(first.message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(feeds, {"y"});
    if (!out.ok() || (*out)[0].scalar<float>() != static_cast<float>(state.range(0) + 1)) {
      state.SkipWithError(out.ok() ? "wrong sum" : std::string(out.status().message()).c_str());
      return;
    }
  }
}

void BM_NestedCallsStep(benchmark::State& state) {
  RunSteps(state, NestedCalls(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_NestedCallsStep)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_InlineChainStep(benchmark::State& state) {
  RunSteps(state, InlineChain(static_cast<int>(state.range(0)), false));
}
BENCHMARK(BM_InlineChainStep)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_InlineChainInlinedNamesStep(benchmark::State& state) {
  RunSteps(state, InlineChain(static_cast<int>(state.range(0)), true));
}
BENCHMARK(BM_InlineChainInlinedNamesStep)->Arg(1000)->Unit(benchmark::kMicrosecond);

// A Keras-style library: `count` layer functions, each a dense layer with
// its bias and activation, called one after another by the graph.
GraphDef LayerLibrary(int count) {
  GraphDef graph;
  Placeholder(&graph);
  std::string last = "x";
  for (int k = 0; k < count; ++k) {
    FunctionDef* f = graph.mutable_library()->add_function();
    f->mutable_signature()->set_name(absl::StrCat("__inference_dense_", k));
    OpDef::ArgDef* in = f->mutable_signature()->add_input_arg();
    in->set_name("inputs");
    in->set_type(DT_FLOAT);
    OpDef::ArgDef* out = f->mutable_signature()->add_output_arg();
    out->set_name("output");
    out->set_type(DT_FLOAT);
    for (const char* name : {"kernel", "bias"}) {
      NodeDef* c = AddBodyNode(f, name, "Const", {});
      (*c->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
      (*c->mutable_attr())["value"] = MakeAttr(TensorToProto(Tensor::Scalar<float>(0.5f)));
    }
    (*AddBodyNode(f, "mul", "Mul", {"inputs", "kernel:output:0"})->mutable_attr())["T"] =
        MakeAttr(DT_FLOAT);
    (*AddBodyNode(f, "add", "AddV2", {"mul:z:0", "bias:output:0"})->mutable_attr())["T"] =
        MakeAttr(DT_FLOAT);
    (*AddBodyNode(f, "relu", "Relu", {"add:z:0"})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    (*AddBodyNode(f, "identity", "Identity", {"relu:activations:0"})->mutable_attr())["T"] =
        MakeAttr(DT_FLOAT);
    (*f->mutable_ret())["output"] = "identity:output:0";
    NodeDef* call = AddNode(&graph, absl::StrCat("dense_", k), "StatefulPartitionedCall", {last});
    NameAttrList fn;
    fn.set_name(f->signature().name());
    (*call->mutable_attr())["f"] = MakeAttr(fn);
    (*call->mutable_attr())["Tin"] = MakeAttr(DataTypeVector{DT_FLOAT});
    (*call->mutable_attr())["Tout"] = MakeAttr(DataTypeVector{DT_FLOAT});
    last = call->name();
  }
  (*AddNode(&graph, "y", "Identity", {last})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  return graph;
}

// From the GraphDef to the first step's result: import (inlining), the
// session's placement and partitioning, the executors, one step.
void BM_LoadLibraryAndRun(benchmark::State& state) {
  const GraphDef graph = LayerLibrary(static_cast<int>(state.range(0)));
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::Scalar<float>(1)}};
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), graph);
    absl::StatusOr<std::vector<Tensor>> out =
        session.ok() ? (*session)->Run(feeds, {"y"}) : session.status();
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
  }
}
BENCHMARK(BM_LoadLibraryAndRun)->Arg(400)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
