// ReportUninitializedVariables through a Session: ref and resource
// variables before, during and after initialization, where its ops are
// placed, and the same report as TensorFlow 1.x writes it in a GraphDef.
#include "ops/uninitialized_variables.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph_io.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::unique_ptr<Session> MakeSession(const GraphDef& def, SessionOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, def);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

// The names a report lists, checking that it is a string vector.
absl::StatusOr<std::vector<std::string>> Report(Session& session, const std::string& report,
                                                const std::vector<std::string>& targets = {}) {
  if (!targets.empty()) {
    absl::Status run = session.Run({}, {}, targets).status();
    if (!run.ok()) return run;
  }
  absl::StatusOr<std::vector<Tensor>> out = session.Run({}, {report});
  if (!out.ok()) return out.status();
  const Tensor& names = (*out)[0];
  if (names.dtype() != DT_STRING || names.dims() != 1) {
    return absl::InternalError("the report is not a string vector: " + names.DebugString());
  }
  return Values<std::string>(names);
}

const NodeDef* FindNodeDef(const GraphDef& def, const std::string& name) {
  for (const NodeDef& node : def.node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

TEST(ReportUninitializedVariables, NamesTheUninitializedVariablesInListOrder) {
  Scope scope = ops::NewRootScope();
  const Variable a(scope, "a", 1.f);
  const Variable b(scope, "layer/b", Tensor::FromVector<double>({1, 2}, TensorShape({2})));
  const Variable c(scope, "c", int64_t{3});
  ASSERT_OK_AND_ASSIGN(Output report, ReportUninitializedVariables(scope, {a, b, c}));
  EXPECT_EQ(report.name(), "report_uninitialized_variables/boolean_mask/GatherV2");
  GlobalVariablesInitializer(scope);
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  std::unique_ptr<Session> session = MakeSession(def);
  ASSERT_NE(session, nullptr);

  EXPECT_THAT(Report(*session, report.name()), IsOkAndHolds(ElementsAre("a", "layer/b", "c")));
  EXPECT_THAT(Report(*session, report.name(), {b.initializer().name()}),
              IsOkAndHolds(ElementsAre("a", "c")));
  EXPECT_THAT(Report(*session, report.name(), {"init"}), IsOkAndHolds(IsEmpty()));
}

TEST(ReportUninitializedVariables, ChecksResourceVariablesWithVarIsInitializedOp) {
  Scope scope = ops::NewRootScope();
  const Variable w(scope, "w", 1.f);
  const ops::VarHandleOp h(scope.WithOpName("h"), DT_INT64, PartialTensorShape({}));
  const ops::AssignVariableOp assign_h(scope.WithOpName("h/Assign"), h, int64_t{5});
  ASSERT_OK_AND_ASSIGN(Output report, ReportUninitializedVariables(scope, {w.ref(), h.resource}));
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  const NodeDef* check = FindNodeDef(def, "report_uninitialized_variables/VarIsInitializedOp");
  ASSERT_NE(check, nullptr);
  EXPECT_THAT(check->input(), ElementsAre("h"));
  std::unique_ptr<Session> session = MakeSession(def);
  ASSERT_NE(session, nullptr);

  // The handle's variable does not exist until it is first assigned.
  EXPECT_THAT(Report(*session, report.name()), IsOkAndHolds(ElementsAre("w", "h")));
  EXPECT_THAT(Report(*session, report.name(), {"h/Assign"}), IsOkAndHolds(ElementsAre("w")));
  EXPECT_THAT(Report(*session, report.name(), {w.initializer().name()}), IsOkAndHolds(IsEmpty()));
}

TEST(ReportUninitializedVariables, AnEmptyListIsAnEmptyConstant) {
  Scope scope = ops::NewRootScope();
  ASSERT_OK_AND_ASSIGN(Output report, ReportUninitializedVariables(scope, std::vector<Variable>{}));
  EXPECT_EQ(report.name(), "report_uninitialized_variables/Const");
  EXPECT_EQ(report.node()->op(), "Const");
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  EXPECT_EQ(def.node_size(), 1);
  std::unique_ptr<Session> session = MakeSession(def);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(Report(*session, report.name()), IsOkAndHolds(IsEmpty()));
}

TEST(ReportUninitializedVariables, BuildsTensorFlowsNodes) {
  Scope scope = ops::NewRootScope();
  const Variable a(scope.WithDevice("/job:ps/task:0"), "a", 1.f);
  const Variable b(scope, "b", 2.f);
  ASSERT_OK_AND_ASSIGN(Output report, ReportUninitializedVariables(scope, {a, b}));
  EXPECT_EQ(report.node()->op(), "GatherV2");
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  const std::string prefix = "report_uninitialized_variables/";
  std::map<std::string, std::string> ops;
  for (const NodeDef& node : def.node()) {
    if (node.name().starts_with(prefix)) ops[node.name().substr(prefix.size())] = node.op();
  }
  EXPECT_THAT(ops,
              ElementsAre(std::pair("Const", "Const"),
                          std::pair("IsVariableInitialized", "IsVariableInitialized"),
                          std::pair("IsVariableInitialized_1", "IsVariableInitialized"),
                          std::pair("LogicalNot", "LogicalNot"),
                          std::pair("boolean_mask/GatherV2", "GatherV2"),
                          std::pair("boolean_mask/GatherV2/axis", "Const"),
                          std::pair("boolean_mask/Reshape", "Reshape"),
                          std::pair("boolean_mask/Reshape/shape", "Const"),
                          std::pair("boolean_mask/Reshape_1", "Reshape"),
                          std::pair("boolean_mask/Reshape_1/shape", "Const"),
                          std::pair("boolean_mask/Squeeze", "Squeeze"),
                          std::pair("boolean_mask/Where", "Where"), std::pair("stack", "Pack")));

  // Each check is on its variable's device and asks to be colocated with it.
  const NodeDef* check_a = FindNodeDef(def, prefix + "IsVariableInitialized");
  ASSERT_NE(check_a, nullptr);
  EXPECT_THAT(check_a->input(), ElementsAre("a"));
  EXPECT_EQ(check_a->device(), "/job:ps/task:0");
  EXPECT_THAT(check_a->attr().at("_class").list().s(), ElementsAre("loc:@a"));
  const NodeDef* stack = FindNodeDef(def, prefix + "stack");
  EXPECT_EQ(stack->attr().at("N").i(), 2);
  EXPECT_EQ(stack->attr().at("axis").i(), 0);
  // As TensorFlow's, on /cpu:0 of wherever the report goes.
  EXPECT_EQ(stack->device(), "/device:CPU:0");
  const NodeDef* squeeze = FindNodeDef(def, prefix + "boolean_mask/Squeeze");
  EXPECT_THAT(squeeze->attr().at("squeeze_dims").list().i(), ElementsAre(1));
  const NodeDef* names = FindNodeDef(def, prefix + "Const");
  EXPECT_THAT(names->attr().at("value").tensor().string_val(), ElementsAre("a", "b"));

  // A second report gets a scope of its own, as in TensorFlow.
  ASSERT_OK_AND_ASSIGN(Output again, ReportUninitializedVariables(scope, {b}));
  EXPECT_EQ(again.name(), "report_uninitialized_variables_1/boolean_mask/GatherV2");
}

TEST(ReportUninitializedVariables, ChecksRunWithTheirVariableAndTheMaskOnTheClientDevice) {
  Scope scope = ops::NewRootScope();
  const Variable a(scope, "a", 1.f);
  const Variable b(scope.WithDevice("/device:CPU:1"), "b", 2.f);
  ASSERT_OK_AND_ASSIGN(Output report, ReportUninitializedVariables(scope, {a, b}));
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  SessionOptions options;
  options.device_count["CPU"] = 2;
  std::unique_ptr<Session> session = MakeSession(def, options);
  ASSERT_NE(session, nullptr);
  RunOptions run_options;
  run_options.trace = true;
  RunMetadata metadata;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       session->Run(run_options, {}, {report.name()}, {}, &metadata));
  EXPECT_THAT(Values<std::string>(out[0]), ElementsAre("a", "b"));
  std::map<std::string, std::string> devices;
  for (const NodeExecStats& stats : metadata.step_stats) devices[stats.node_name] = stats.device;
  const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  const std::string cpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
  EXPECT_EQ(devices["report_uninitialized_variables/IsVariableInitialized"], cpu0);
  EXPECT_EQ(devices["report_uninitialized_variables/IsVariableInitialized_1"], cpu1);
  EXPECT_EQ(devices["report_uninitialized_variables/stack"], cpu0);
  EXPECT_EQ(devices["report_uninitialized_variables/boolean_mask/GatherV2"], cpu0);
}

TEST(ReportUninitializedVariables, UnderAGpuScopeTheStringWorkGoesToThatTasksCpu) {
  Scope scope = ops::NewRootScope().WithDevice("/job:worker/task:1/device:GPU:0");
  const Variable a(scope, "a", 1.f);
  ASSERT_OK(ReportUninitializedVariables(scope, {a}).status());
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  const std::string prefix = "report_uninitialized_variables/";
  EXPECT_EQ(FindNodeDef(def, prefix + "IsVariableInitialized")->device(),
            "/job:worker/task:1/device:GPU:0");
  for (const char* name :
       {"stack", "LogicalNot", "Const", "boolean_mask/Where", "boolean_mask/GatherV2"}) {
    EXPECT_EQ(FindNodeDef(def, prefix + name)->device(), "/job:worker/task:1/device:CPU:0") << name;
  }
}

TEST(ReportUninitializedVariables, RejectsWhatIsNotAVariableNamingIt) {
  Scope scope = ops::NewRootScope();
  const Variable a(scope, "a", 1.f);
  // A Variable converts to its read, which is not the variable.
  EXPECT_THAT(ReportUninitializedVariables(scope, std::vector<Output>{a.ref(), a}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("var_list[1]"), HasSubstr("'a/read'"), HasSubstr("Identity"),
                             HasSubstr("float"))));
  EXPECT_THAT(ReportUninitializedVariables(scope, std::vector<Output>{Output()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("var_list[0] is a null")));
  // Nothing was built.
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  for (const NodeDef& node : def.node())
    EXPECT_FALSE(node.name().starts_with("report")) << node.name();
}

TEST(ReportUninitializedVariables, ReturnsTheScopesEarlierError) {
  Scope scope = ops::NewRootScope();
  const Variable a(scope, "a", 1.f);
  scope.UpdateStatus(absl::InternalError("earlier"));
  EXPECT_THAT(ReportUninitializedVariables(scope, {a}),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("earlier")));
}

TEST(AllVariables, ListsRefAndResourceVariablesInNodeOrder) {
  Scope scope = ops::NewRootScope();
  const Variable a(scope, "a", 1.f);
  const ops::VarHandleOp h(scope.WithOpName("h"), DT_FLOAT, PartialTensorShape({}));
  const Variable b(scope, "b", 2.f);
  const std::vector<Output> variables = AllVariables(scope);
  std::vector<std::string> names;
  for (const Output& v : variables) names.push_back(v.name());
  EXPECT_THAT(names, ElementsAre("a", "h", "b"));
  EXPECT_EQ(variables[1].type(), DT_RESOURCE);

  ASSERT_OK_AND_ASSIGN(Output report, ReportUninitializedVariables(scope, variables));
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  std::unique_ptr<Session> session = MakeSession(def);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(Report(*session, report.name()), IsOkAndHolds(ElementsAre("a", "h", "b")));
}

// TensorFlow 1.15's graph for two ref variables and a resource variable,
// their initializers and tf.report_uninitialized_variables().
std::string TensorFlowReportPath() {
  return testing::SourceRoot() + "/tests/ops/testdata/tf_report_uninitialized_variables.pbtxt";
}

TEST(ReportUninitializedVariables, TensorFlowsGraphImportsAndRuns) {
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(TensorFlowReportPath()));
  std::unique_ptr<Session> session = MakeSession(def);
  ASSERT_NE(session, nullptr);
  const std::string report = "report_uninitialized_variables/boolean_mask/GatherV2";
  EXPECT_THAT(Report(*session, report), IsOkAndHolds(ElementsAre("a", "b", "r")));
  EXPECT_THAT(Report(*session, report, {"b/Assign"}), IsOkAndHolds(ElementsAre("a", "r")));
  EXPECT_THAT(Report(*session, report, {"r/Assign"}), IsOkAndHolds(ElementsAre("a")));
  EXPECT_THAT(Report(*session, report, {"init"}), IsOkAndHolds(IsEmpty()));
  // TensorFlow's own check of the resource variable agrees.
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> is_initialized,
                       session->Run({}, {"r/IsInitialized/VarIsInitializedOp"}));
  EXPECT_TRUE(is_initialized[0].scalar<bool>());
}

}  // namespace
}  // namespace rill
