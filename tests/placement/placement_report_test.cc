#include "placement/placement_report.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "placement/partitioner.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kWorker[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kPs2[] = "/job:ps/replica:0/task:2/device:CPU:0";
constexpr char kPs10[] = "/job:ps/replica:0/task:10/device:CPU:0";

// x (Placeholder), v [2,3] float and u [?,3] float variables on two ps
// tasks, their reads and a sum on the worker, and a NoOp after the sum.
class PlacementReport : public ::testing::Test {
 protected:
  void SetUp() override {
    auto x = ops::Placeholder(s_.WithOpName("x"), DT_FLOAT);
    auto v = ops::VariableV2(s_.WithOpName("v"), PartialTensorShape({2, 3}), DT_FLOAT);
    auto u = ops::VariableV2(s_.WithOpName("u"), PartialTensorShape({-1, 3}), DT_FLOAT);
    auto v_read = ops::Identity(s_.WithOpName("v_read"), v);
    auto u_read = ops::Identity(s_.WithOpName("u_read"), u);
    auto sum = ops::Add(s_.WithOpName("sum"), v_read, u_read);
    ops::Add(s_.WithOpName("out"), sum, x);
    ops::NoOp(s_.WithOpName("done").WithControlDependencies(std::vector<Operation>{sum.operation}));
    ASSERT_OK(s_.status());
    const std::map<std::string, std::string> devices = {
        {"v", kPs10}, {"v_read", kPs10}, {"u", kPs2}, {"u_read", kPs2}};
    placement_.nodes.resize(graph().num_nodes());
    for (const Node* node : graph().nodes()) {
      const auto it = devices.find(node->name());
      NodePlacement& p = placement_.nodes[node->id()];
      p.device = it == devices.end() ? kWorker : it->second;
      p.reason = it == devices.end() ? "no request: client default" : "requested";
    }
  }

  const Graph& graph() const { return *s_.graph(); }

  Scope s_ = ops::NewRootScope();
  Placement placement_;
};

TEST_F(PlacementReport, LogHasOneLinePerNodeInGraphOrder) {
  EXPECT_EQ(PlacementLog(graph(), placement_),
            "x: (Placeholder): /job:worker/replica:0/task:0/device:CPU:0\n"
            "v: (VariableV2): /job:ps/replica:0/task:10/device:CPU:0\n"
            "u: (VariableV2): /job:ps/replica:0/task:2/device:CPU:0\n"
            "v_read: (Identity): /job:ps/replica:0/task:10/device:CPU:0\n"
            "u_read: (Identity): /job:ps/replica:0/task:2/device:CPU:0\n"
            "sum: (Add): /job:worker/replica:0/task:0/device:CPU:0\n"
            "out: (Add): /job:worker/replica:0/task:0/device:CPU:0\n"
            "done: (NoOp): /job:worker/replica:0/task:0/device:CPU:0\n");
}

TEST_F(PlacementReport, ExplanationGivesEachNodesReason) {
  const std::string text = PlacementExplanation(graph(), placement_);
  EXPECT_THAT(text, HasSubstr("x: (Placeholder): /job:worker/replica:0/task:0/device:CPU:0"
                              "  <- no request: client default\n"));
  EXPECT_THAT(text, HasSubstr("v: (VariableV2): /job:ps/replica:0/task:10/device:CPU:0"
                              "  <- requested\n"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), graph().num_nodes());
}

TEST_F(PlacementReport, ExplanationOmitsAnEmptyReason) {
  placement_.nodes[0].reason.clear();
  EXPECT_THAT(
      PlacementExplanation(graph(), placement_),
      ::testing::StartsWith("x: (Placeholder): /job:worker/replica:0/task:0/device:CPU:0\n"));
}

TEST_F(PlacementReport, SummaryCountsNodesAndVariableBytesInDeviceOrder) {
  EXPECT_EQ(PlacementSummary(graph(), placement_, nullptr),
            "/job:ps/replica:0/task:2/device:CPU:0: 2 nodes, 12 B of variables\n"
            "/job:ps/replica:0/task:10/device:CPU:0: 2 nodes, 24 B of variables\n"
            "/job:worker/replica:0/task:0/device:CPU:0: 4 nodes, 0 B of variables\n");
}

TEST_F(PlacementReport, SummaryCountsSendsAndRecvsOfThePartitions) {
  ASSERT_OK_AND_ASSIGN(auto partitions, PartitionGraph(graph(), placement_, {}));
  EXPECT_EQ(PlacementSummary(graph(), placement_, &partitions),
            "/job:ps/replica:0/task:2/device:CPU:0: 2 nodes, 12 B of variables, 1 send, 0 recv\n"
            "/job:ps/replica:0/task:10/device:CPU:0: 2 nodes, 24 B of variables, 1 send, 0 recv\n"
            "/job:worker/replica:0/task:0/device:CPU:0: 4 nodes, 0 B of variables, 0 send, "
            "2 recv\n");
}

TEST(PlacementSummary, LargeVariablesAreShownInBinaryUnits) {
  Scope s = ops::NewRootScope();
  ops::VariableV2(s.WithOpName("big"), PartialTensorShape({1024, 768}), DT_FLOAT);
  ops::VariableV2(s.WithOpName("one"), PartialTensorShape({}), DT_DOUBLE);
  ASSERT_OK(s.status());
  Placement placement;
  placement.nodes = {{kWorker, ""}, {kPs2, ""}};
  EXPECT_EQ(PlacementSummary(*s.graph(), placement, nullptr),
            "/job:ps/replica:0/task:2/device:CPU:0: 1 node, 8 B of variables\n"
            "/job:worker/replica:0/task:0/device:CPU:0: 1 node, 3.0 MiB of variables\n");
}

TEST_F(PlacementReport, DotColoursNodesByDeviceWithALegend) {
  const std::string dot = PlacementDot(graph(), placement_, nullptr);
  EXPECT_THAT(dot, ::testing::StartsWith("digraph "));
  EXPECT_THAT(dot, HasSubstr("cluster_legend"));
  for (const char* device : {kWorker, kPs2, kPs10}) {
    EXPECT_THAT(dot, HasSubstr(std::string("label=\"") + device + "\"")) << dot;
  }
  EXPECT_THAT(dot, HasSubstr("label=\"v_read\\nIdentity\""));
  // One dashed edge: done's control input.
  EXPECT_EQ(dot.find("style=dashed]"), dot.rfind("style=dashed]"));
  EXPECT_NE(dot.find("style=dashed]"), std::string::npos);
}

TEST_F(PlacementReport, DotWithPartitionsJoinsEachSendToItsRecv) {
  ASSERT_OK_AND_ASSIGN(auto partitions, PartitionGraph(graph(), placement_, {}));
  const std::string dot = PlacementDot(graph(), placement_, &partitions);
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_0"));
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_2"));
  EXPECT_THAT(dot, Not(HasSubstr("subgraph cluster_3")));
  EXPECT_THAT(dot, HasSubstr("\\n_Send\""));
  EXPECT_THAT(dot, HasSubstr("\\n_Recv\""));
  int dotted = 0;
  for (size_t at = dot.find("style=dotted"); at != std::string::npos;
       at = dot.find("style=dotted", at + 1)) {
    ++dotted;
  }
  EXPECT_EQ(dotted, 2) << dot;
}

// Renders with Graphviz when it is installed: the output must be a
// picture, not just text that looks like DOT.
class DotRendering : public PlacementReport {
 protected:
  void Render(const std::string& dot) {
    if (access("/usr/bin/dot", X_OK) != 0) GTEST_SKIP() << "Graphviz (dot) is not installed";
    const std::string dir = testing::MakeTempDir();
    const std::string in = dir + "/placement.dot";
    const std::string out = dir + "/placement.svg";
    std::ofstream(in) << dot;
    const testing::ProgramResult r = testing::RunProgram({"/usr/bin/dot", "-Tsvg", in, "-o", out});
    ASSERT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 0) << r.err << dot;
    EXPECT_THAT(r.err, Not(HasSubstr("Warning"))) << dot;
    EXPECT_THAT(testing::ReadFileOrDie(out), HasSubstr("<svg"));
    std::filesystem::remove_all(dir);
  }
};

TEST_F(DotRendering, GraphvizRendersThePlacement) {
  Render(PlacementDot(graph(), placement_, nullptr));
}

TEST_F(DotRendering, GraphvizRendersThePartitions) {
  ASSERT_OK_AND_ASSIGN(auto partitions, PartitionGraph(graph(), placement_, {}));
  Render(PlacementDot(graph(), placement_, &partitions));
}

}  // namespace
}  // namespace rill
