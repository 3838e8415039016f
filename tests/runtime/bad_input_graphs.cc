#include "tests/runtime/bad_input_graphs.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/attr_value_util.h"
#include "graph/status_macros.h"
#include "graph/tensor_proto_util.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

constexpr int64_t k2To32 = int64_t{1} << 32;

// Builds the graphs node by node, as a client that skips the scope's
// checks would send them.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string device) : device_(std::move(device)) {}

  GraphBuilder& Node(const std::string& name, const std::string& op,
                     const std::vector<std::string>& inputs,
                     const std::vector<std::pair<std::string, AttrValue>>& attrs) {
    NodeDef* node = graph_.add_node();
    node->set_name(name);
    node->set_op(op);
    node->set_device(device_);
    for (const std::string& input : inputs) node->add_input(input);
    for (const auto& [key, value] : attrs) (*node->mutable_attr())[key] = value;
    return *this;
  }
  GraphBuilder& Const(const std::string& name, const TensorProto& value) {
    return Node(name, "Const", {},
                {{"value", MakeAttr(value)}, {"dtype", MakeAttr(value.dtype())}});
  }
  GraphBuilder& Const(const std::string& name, const Tensor& value) {
    return Const(name, TensorToProto(value, TensorProtoEncoding::kTypedValues));
  }
  GraphBuilder& Placeholder(const std::string& name, DataType dtype) {
    return Node(name, "Placeholder", {}, {{"dtype", MakeAttr(dtype)}});
  }
  GraphDef Build() const { return graph_; }

 private:
  const std::string device_;
  GraphDef graph_;
};

Tensor Int64s(std::vector<int64_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<int64_t>(values, TensorShape({n}));
}

// An int32 [2^32] TensorProto: `values` by the repeat-last rule, or
// `content` bytes.
TensorProto HugeInt32Proto(std::vector<int32_t> values, std::string content) {
  TensorProto proto;
  proto.set_dtype(DT_INT32);
  proto.mutable_tensor_shape()->add_dim()->set_size(k2To32);
  for (int32_t v : values) proto.add_int_val(v);
  proto.set_tensor_content(std::move(content));
  return proto;
}

BadInputCase Case(std::string name, GraphBuilder graph, std::string fetch, absl::StatusCode code,
                  std::string node, std::vector<std::pair<std::string, Tensor>> feeds = {}) {
  return BadInputCase{std::move(name),  graph.Build(), std::move(feeds),
                      std::move(fetch), code,          std::move(node)};
}

const char* const kDivisionOps[] = {"Div",         "FloorDiv",    "FloorMod",
                                    "TruncateDiv", "TruncateMod", "Mod"};

bool IsRemainder(const std::string& op) { return op.find("Mod") != std::string::npos; }

}  // namespace

std::vector<BadInputCase> BadInputCases(const std::string& device) {
  using absl::StatusCode;
  const Tensor huge_dims = Int64s({k2To32, k2To32, k2To32});
  const auto fill_attrs = std::vector<std::pair<std::string, AttrValue>>{
      {"T", MakeAttr(DT_FLOAT)}, {"index_type", MakeAttr(DT_INT64)}};
  std::vector<BadInputCase> cases;
  for (const char* op : {"Fill", "RandomUniform"}) {
    GraphBuilder g(device);
    g.Const("dims", huge_dims).Const("value", Tensor::Scalar<float>(1));
    if (std::string(op) == "Fill") {
      g.Node("out", op, {"dims", "value"}, fill_attrs);
    } else {
      g.Node("out", op, {"dims"}, {{"T", MakeAttr(DT_INT64)}, {"dtype", MakeAttr(DT_FLOAT)}});
    }
    cases.push_back(Case(absl::StrCat(op, "OfConstDimsThatOverflow"), std::move(g), "out",
                         StatusCode::kInvalidArgument, "out"));
  }
  {
    GraphBuilder g(device);
    g.Const("x", Tensor::FromVector<float>({1, 2}, TensorShape({1, 2})))
        .Const("multiples", Int64s({k2To32, int64_t{1} << 40}))
        .Node("out", "Tile", {"x", "multiples"},
              {{"T", MakeAttr(DT_FLOAT)}, {"Tmultiples", MakeAttr(DT_INT64)}});
    cases.push_back(Case("TileOfConstMultiplesThatOverflow", std::move(g), "out",
                         StatusCode::kInvalidArgument, "out"));
  }
  {
    GraphBuilder g(device);
    g.Placeholder("dims", DT_INT64).Const("value", Tensor::Scalar<float>(1));
    g.Node("out", "Fill", {"dims", "value"}, fill_attrs);
    cases.push_back(Case("FillOfFedDimsThatOverflow", std::move(g), "out",
                         StatusCode::kInvalidArgument, "out", {{"dims", huge_dims}}));
  }
  {
    GraphBuilder g(device);
    g.Placeholder("start", DT_INT64)
        .Const("limit", Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::max()))
        .Const("delta", Tensor::Scalar<int64_t>(1))
        .Node("out", "Range", {"start", "limit", "delta"}, {{"Tidx", MakeAttr(DT_INT64)}});
    cases.push_back(Case(
        "RangeOfMoreElementsThanInt64Counts", std::move(g), "out", StatusCode::kInvalidArgument,
        "out", {{"start", Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::min())}}));
  }
  {
    GraphBuilder g(device);
    g.Const("x", Tensor::FromVector<int32_t>({7, 8}, TensorShape({2})))
        .Placeholder("y", DT_INT32)
        .Node("out", "FloorDiv", {"x", "y"}, {{"T", MakeAttr(DT_INT32)}});
    cases.push_back(Case("IntegerDivisionByZero", std::move(g), "out", StatusCode::kInvalidArgument,
                         "out", {{"y", Tensor::FromVector<int32_t>({1, 0}, TensorShape({2}))}}));
  }
  {
    GraphBuilder g(device);
    g.Const("out", HugeInt32Proto({}, std::string(4, '\0')));
    cases.push_back(Case("ConstWithLessContentThanItsShape", std::move(g), "out",
                         StatusCode::kInvalidArgument, "out"));
  }
  {
    GraphBuilder g(device);
    g.Const("out", HugeInt32Proto({1}, ""));
    cases.push_back(Case("ConstOfOneValueOverAShapePastTheTensorLimit", std::move(g), "out",
                         StatusCode::kResourceExhausted, "out"));
  }
  {
    GraphBuilder g(device);
    g.Placeholder("dims", DT_INT64).Const("value", Tensor::Scalar<float>(1));
    g.Node("out", "Fill", {"dims", "value"}, fill_attrs);
    cases.push_back(Case("FillOfFedDimsPastTheTensorLimit", std::move(g), "out",
                         StatusCode::kResourceExhausted, "out", {{"dims", Int64s({k2To32})}}));
  }
  return cases;
}

absl::Status RunBadInputCase(const SessionOptions& options, const BadInputCase& c) {
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options, c.graph));
  return session->Run(c.feeds, {c.fetch}).status();
}

GraphDef MostNegativeOverMinusOneGraph(const std::string& device) {
  GraphBuilder g(device);
  g.Const("x_int32",
          Tensor::FromVector<int32_t>({std::numeric_limits<int32_t>::min()}, TensorShape({1})))
      .Const("y_int32", Tensor::Scalar<int32_t>(-1))
      .Const("x_int64",
             Tensor::FromVector<int64_t>({std::numeric_limits<int64_t>::min()}, TensorShape({1})))
      .Const("y_int64", Tensor::Scalar<int64_t>(-1));
  for (const char* op : kDivisionOps) {
    for (const auto& [type, dtype] : {std::pair{"int32", DT_INT32}, std::pair{"int64", DT_INT64}}) {
      g.Node(absl::StrCat(op, "_", type), op, {absl::StrCat("x_", type), absl::StrCat("y_", type)},
             {{"T", MakeAttr(dtype)}});
    }
  }
  return g.Build();
}

std::vector<std::string> MostNegativeOverMinusOneFetches() {
  std::vector<std::string> fetches;
  for (const char* op : kDivisionOps) {
    for (const char* type : {"int32", "int64"}) fetches.push_back(absl::StrCat(op, "_", type));
  }
  return fetches;
}

void ExpectWrappedQuotients(const std::vector<std::string>& fetches,
                            const std::vector<Tensor>& values) {
  ASSERT_EQ(fetches.size(), values.size());
  for (size_t i = 0; i < fetches.size(); ++i) {
    SCOPED_TRACE(fetches[i]);
    const bool remainder = IsRemainder(fetches[i]);
    const Tensor& v = values[i];
    ASSERT_EQ(v.NumElements(), 1);
    if (v.dtype() == DT_INT32) {
      EXPECT_EQ(v.data<int32_t>()[0], remainder ? 0 : std::numeric_limits<int32_t>::min());
    } else {
      ASSERT_EQ(v.dtype(), DT_INT64);
      EXPECT_EQ(v.data<int64_t>()[0], remainder ? 0 : std::numeric_limits<int64_t>::min());
    }
  }
}

void ExpectGoodStepRuns(const SessionOptions& options, const std::string& device) {
  const Scope root = ops::NewRootScope().WithDevice(device);
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Add(root.WithOpName("y"), ops::Square(root, x),
           ops::Const(root, Tensor::Scalar<float>(1), DT_FLOAT));
  ASSERT_OK_AND_ASSIGN(GraphDef graph, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, graph));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       session->Run({{"x", Tensor::Scalar<float>(3)}}, {"y"}));
  EXPECT_EQ(out[0].data<float>()[0], 10);
}

}  // namespace rill::testing
