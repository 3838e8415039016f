// Every GraphDef that TensorFlow wrote under testdata/tf_graphs reads,
// imports with the standard ops, and survives a write/read round trip.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/tensor.h"
#include "ops/registry.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::rill::testing::TestDataDir;

std::string GraphDir() { return TestDataDir() + "/tf_graphs"; }

std::vector<std::string> GraphFiles() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(GraphDir(), error)) {
    const std::string extension = entry.path().extension().string();
    if (extension == ".pb" || extension == ".pbtxt") {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::unique_ptr<Graph>> ReadAndImport(const std::string& name) {
  absl::StatusOr<GraphDef> def = ReadGraphDef(GraphDir() + "/" + name);
  if (!def.ok()) return def.status();
  return ImportGraphDef(*def, StandardOps());
}

TEST(TfGraphs, AllEightGraphsArePresent) { EXPECT_EQ(GraphFiles().size(), 8u); }

class TfGraph : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path() const { return GraphDir() + "/" + GetParam(); }
};

TEST_P(TfGraph, ReadsAndImportsWithStandardOps) {
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(path()));
  ASSERT_GT(def.node_size(), 0);
  auto graph = ImportGraphDef(def, StandardOps());
  ASSERT_TRUE(graph.ok()) << GetParam() << ": " << graph.status();
  EXPECT_EQ((*graph)->num_nodes(), def.node_size());
  // What the importer produces imports again unchanged.
  const GraphDef out = (*graph)->ToGraphDef();
  ASSERT_OK_AND_ASSIGN(auto again, ImportGraphDef(out, StandardOps()));
  EXPECT_TRUE(MessageDifferencer::Equals(again->ToGraphDef(), out));
}

TEST_P(TfGraph, RoundTripsThroughBothFormats) {
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(path()));
  for (const GraphFormat format : {GraphFormat::kBinary, GraphFormat::kText}) {
    const std::string bytes = SerializeGraphDef(def, format);
    EXPECT_EQ(DetectGraphFormat(bytes), format);
    ASSERT_OK_AND_ASSIGN(GraphDef parsed, ParseGraphDef(bytes, format, GetParam()));
    std::string difference;
    MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&difference);
    EXPECT_TRUE(differencer.Compare(parsed, def)) << difference;
  }
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(TestData, TfGraph, ::testing::ValuesIn(GraphFiles()), TestName);

TEST(TfGraphs, RegressionUsesOldStyleVariables) {
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(GraphDir() + "/rust_regression.pb"));
  EXPECT_FALSE(def.has_versions());
  ASSERT_OK_AND_ASSIGN(auto graph, ImportGraphDef(def, StandardOps()));
  for (const char* name : {"x", "y"}) {
    const Node* node = graph->FindNode(name);
    ASSERT_NE(node, nullptr) << name;
    EXPECT_EQ(node->op(), "Placeholder");
    // Written before GraphDef version 22: a rank-0 shape attr means any
    // shape, so the 100 points of the regression can be fed.
    EXPECT_TRUE(node->output_shape(0).unknown_rank()) << name;
  }
  for (const char* name : {"w", "b"}) {
    const Node* node = graph->FindNode(name);
    ASSERT_NE(node, nullptr) << name;
    EXPECT_EQ(node->op(), "Variable");
    EXPECT_EQ(node->output_type(0), DT_FLOAT_REF);
  }
  for (const char* name : {"init", "train"}) {
    const Node* node = graph->FindNode(name);
    ASSERT_NE(node, nullptr) << name;
    EXPECT_EQ(node->op(), "NoOp");
  }
}

TEST(TfGraphs, CheckpointGraphUsesVariableV2AndSaveRestore) {
  ASSERT_OK_AND_ASSIGN(auto graph, ReadAndImport("rust_regression_ckpt.pb"));
  for (const char* name : {"w", "b"}) {
    const Node* node = graph->FindNode(name);
    ASSERT_NE(node, nullptr) << name;
    EXPECT_EQ(node->op(), "VariableV2");
    EXPECT_EQ(node->output_type(0), DT_FLOAT_REF);
  }
  const Node* save = graph->FindNode("save/SaveV2");
  const Node* restore = graph->FindNode("save/RestoreV2");
  ASSERT_NE(save, nullptr);
  ASSERT_NE(restore, nullptr);
  EXPECT_EQ(save->op(), "SaveV2");
  EXPECT_EQ(restore->op(), "RestoreV2");
  int colocated = 0;
  for (const Node* node : graph->nodes()) colocated += node->def().attr().contains("_class");
  EXPECT_GT(colocated, 0);
}

TEST(TfGraphs, TfAddInfersTheShapeOfItsConsts) {
  ASSERT_OK_AND_ASSIGN(auto graph, ReadAndImport("tfadd_int32.pbtxt"));
  const Node* sum = graph->FindNode("x_y_sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->op(), "Add");
  EXPECT_EQ(sum->output_type(0), DT_INT32);
  EXPECT_EQ(sum->output_shape(0), PartialTensorShape({1}));
  const Node* x = graph->FindNode("x_const");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(x->constant_value(), nullptr);
  EXPECT_EQ(x->constant_value()->flat<int32_t>()(0), 1);
  EXPECT_EQ(graph->versions().producer(), 15);
}

TEST(TfGraphs, ConstValuesDecodeFromTensorContent) {
  ASSERT_OK_AND_ASSIGN(auto graph, ReadAndImport("const_values.pbtxt"));
  const Node* x = graph->FindNode("x");
  const Node* y = graph->FindNode("y");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  ASSERT_NE(x->constant_value(), nullptr);
  ASSERT_NE(y->constant_value(), nullptr);
  EXPECT_TRUE(TensorsEqual(*x->constant_value(),
                           Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))));
  EXPECT_TRUE(TensorsEqual(*y->constant_value(),
                           Tensor::FromVector<int64_t>({1, 3, 2, 5, 4, 7}, TensorShape({2, 3}))));
  EXPECT_EQ(x->output_shape(0), PartialTensorShape({2, 3}));
}

TEST(TfGraphs, DeviceStringsAreKeptAsWritten) {
  ASSERT_OK_AND_ASSIGN(auto graph, ReadAndImport("partial_device_names.pbtxt"));
  EXPECT_EQ(graph->FindNode("Add")->requested_device(), "/job:localhost/replica:0/task:0");
  EXPECT_EQ(graph->FindNode("Mul")->requested_device(), "");
  EXPECT_EQ(graph->FindNode("Sub")->requested_device(),
            "/job:localhost/replica:0/task:0/device:CPU:1");
}

TEST(TfGraphs, SmallGraphsHaveTheirOps) {
  ASSERT_OK_AND_ASSIGN(auto addition, ReadAndImport("rust_addition.pb"));
  EXPECT_EQ(addition->FindNode("z")->op(), "AddV2");
  EXPECT_EQ(addition->FindNode("z")->output_type(0), DT_INT32);
  ASSERT_OK_AND_ASSIGN(auto multiplication, ReadAndImport("rust_multiplication.pb"));
  EXPECT_EQ(multiplication->FindNode("c")->op(), "Mul");
  EXPECT_EQ(multiplication->FindNode("c")->output_type(0), DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(auto frozen, ReadAndImport("tf2onnx_regression_frozen.pb"));
  EXPECT_TRUE(frozen->FindNode("X")->output_shape(0).unknown_rank());
}

}  // namespace
}  // namespace rill
