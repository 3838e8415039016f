// Function calls in GraphDefs as TensorFlow writes them: PartitionedCall,
// StatefulPartitionedCall and calls by name, inlined when the graph is
// imported and run by a Session; and the errors a bad library gets.
#include "graph/function_inline.h"

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/registry.h"
#include "runtime/session.h"
#include "tests/graph/graph_text.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

// y = x * x + x, for any numeric T; its nodes use TensorFlow's body naming
// ("node:output_arg:index").
constexpr char kSquarePlus[] = R"pb(
  signature {
    name: "SquarePlus"
    input_arg { name: "x" type_attr: "T" }
    output_arg { name: "y" type_attr: "T" }
    attr { name: "T" type: "type" }
  }
  node_def {
    name: "sq"
    op: "Mul"
    input: "x"
    input: "x"
    attr {
      key: "T"
      value { placeholder: "T" }
    }
  }
  node_def {
    name: "sum"
    op: "AddV2"
    input: "sq:z:0"
    input: "x"
    attr {
      key: "T"
      value { placeholder: "T" }
    }
  }
  ret { key: "y" value: "sum:z:0" }
)pb";

// Twice SquarePlus: a nested call by the function's name.
constexpr char kTwice[] = R"pb(
  signature {
    name: "Twice"
    input_arg { name: "a" type: DT_FLOAT }
    output_arg { name: "b" type: DT_FLOAT }
    output_arg { name: "first" type: DT_FLOAT }
  }
  node_def {
    name: "once"
    op: "SquarePlus"
    input: "a"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node_def {
    name: "again"
    op: "PartitionedCall"
    input: "once:y:0"
    attr {
      key: "Tin"
      value { list { type: DT_FLOAT } }
    }
    attr {
      key: "Tout"
      value { list { type: DT_FLOAT } }
    }
    attr {
      key: "f"
      value {
        func {
          name: "SquarePlus"
          attr {
            key: "T"
            value { type: DT_FLOAT }
          }
        }
      }
    }
  }
  ret { key: "b" value: "again:output:0" }
  ret { key: "first" value: "once:y:0" }
)pb";

using testing::ParseGraph;
using testing::PlaceholderText;
using testing::RunGraph;

TEST(FunctionInlineTest, PartitionedCallRunsTheBody) {
  const GraphDef graph = ParseGraph(PlaceholderText("x", "DT_FLOAT") + R"pb(
                                      node {
                                        name: "call"
                                        op: "StatefulPartitionedCall"
                                        input: "x"
                                        attr {
                                          key: "Tin"
                                          value { list { type: DT_FLOAT } }
                                        }
                                        attr {
                                          key: "Tout"
                                          value { list { type: DT_FLOAT } }
                                        }
                                        attr {
                                          key: "f"
                                          value {
                                            func {
                                              name: "SquarePlus"
                                              attr {
                                                key: "T"
                                                value { type: DT_FLOAT }
                                              }
                                            }
                                          }
                                        }
                                      }
                                    )pb",
                                    {kSquarePlus});
  auto out = RunGraph(graph, {{"x", Tensor::FromVector<float>({1, 2, 3}, {3})}}, {"call:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(testing::Values<float>((*out)[0]), ::testing::ElementsAre(2, 6, 12));
}

TEST(FunctionInlineTest, ACallByTheFunctionsNameTakesItsAttrs) {
  const GraphDef graph = ParseGraph(PlaceholderText("x", "DT_DOUBLE") + R"pb(
                                      node {
                                        name: "call"
                                        op: "SquarePlus"
                                        input: "x"
                                        attr {
                                          key: "T"
                                          value { type: DT_DOUBLE }
                                        }
                                      }
                                    )pb",
                                    {kSquarePlus});
  auto out = RunGraph(graph, {{"x", Tensor::Scalar<double>(4)}}, {"call"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<double>(), 20);
}

TEST(FunctionInlineTest, NestedCallsAndSeveralResults) {
  const GraphDef graph = ParseGraph(PlaceholderText("x", "DT_FLOAT") + R"pb(
                                      node { name: "twice" op: "Twice" input: "x" }
                                      node {
                                        name: "use"
                                        op: "Neg"
                                        input: "twice:1"
                                        attr {
                                          key: "T"
                                          value { type: DT_FLOAT }
                                        }
                                      }
                                    )pb",
                                    {kSquarePlus, kTwice});
  auto out = RunGraph(graph, {{"x", Tensor::Scalar<float>(1)}}, {"twice:0", "use"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 6);  // (1 + 1) = 2, then 4 + 2.
  EXPECT_EQ((*out)[1].scalar<float>(), -2);
}

TEST(FunctionInlineTest, InlinedNodesAreNamedUnderTheCallAndTakeItsDevice) {
  const GraphDef graph =
      ParseGraph(PlaceholderText("x", "DT_FLOAT") + R"pb(
                   node { name: "twice" op: "Twice" input: "x" device: "/device:CPU:0" }
                 )pb",
                 {kSquarePlus, kTwice});
  auto inlined = InlineFunctionCalls(graph, StandardOps());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  EXPECT_FALSE(CallsFunctions(*inlined));
  std::vector<std::string> names;
  for (const NodeDef& node : inlined->node()) {
    names.push_back(node.name());
    if (node.name() != "x") {
      EXPECT_EQ(node.device(), "/device:CPU:0") << node.name();
    }
  }
  EXPECT_THAT(names, ::testing::IsSupersetOf({"twice/once/sq", "twice/once", "twice/again/sum",
                                              "twice/again", "twice"}));
  // Without control inputs on the call, its body reads the call's inputs
  // directly: no Identity per argument.
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("twice/a")));
  for (const NodeDef& node : inlined->node()) {
    if (node.name() == "twice/once/sq") {
      EXPECT_THAT(node.input(), ::testing::ElementsAre("x", "x"));
    }
  }
  EXPECT_EQ(inlined->library().function_size(), 2);
}

// A list argument (N * T) and a list(type) result, spelled out per value.
TEST(FunctionInlineTest, ListArgumentsAndResults) {
  constexpr char kSumAndSwap[] = R"pb(
    signature {
      name: "SumAndSwap"
      input_arg { name: "xs" type: DT_FLOAT number_attr: "N" }
      output_arg { name: "total" type: DT_FLOAT }
      output_arg { name: "swapped" type_list_attr: "Tout" }
      attr { name: "N" type: "int" has_minimum: true minimum: 1 }
      attr { name: "Tout" type: "list(type)" }
    }
    node_def {
      name: "add"
      op: "AddN"
      input: "xs"
      attr {
        key: "N"
        value { placeholder: "N" }
      }
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node_def {
      name: "pair"
      op: "IdentityN"
      input: "xs:1"
      input: "xs:0"
      attr {
        key: "T"
        value { list { type: DT_FLOAT type: DT_FLOAT } }
      }
    }
    ret { key: "total" value: "add:sum:0" }
    ret { key: "swapped" value: "pair:output" }
  )pb";
  const GraphDef graph =
      ParseGraph(PlaceholderText("a", "DT_FLOAT") + PlaceholderText("b", "DT_FLOAT") + R"pb(
                   node {
                     name: "call"
                     op: "SumAndSwap"
                     input: "a"
                     input: "b"
                     attr {
                       key: "N"
                       value { i: 2 }
                     }
                     attr {
                       key: "Tout"
                       value { list { type: DT_FLOAT type: DT_FLOAT } }
                     }
                   }
                 )pb",
                 {kSumAndSwap});
  auto out = RunGraph(graph, {{"a", Tensor::Scalar<float>(1)}, {"b", Tensor::Scalar<float>(2)}},
                      {"call:0", "call:1", "call:2"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 3);
  EXPECT_EQ((*out)[1].scalar<float>(), 2);
  EXPECT_EQ((*out)[2].scalar<float>(), 1);
}

// A resource argument (a captured variable) and a side effect the call
// waits for through control_ret, as TensorFlow 2 writes them.
TEST(FunctionInlineTest, ResourceArgumentsAndControlReturns) {
  constexpr char kAssignDouble[] = R"pb(
    signature {
      name: "AssignDouble"
      input_arg { name: "v" type: DT_RESOURCE }
      input_arg { name: "x" type: DT_FLOAT }
      control_output: "assign"
    }
    node_def {
      name: "twice"
      op: "AddV2"
      input: "x"
      input: "x"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node_def {
      name: "assign"
      op: "AssignVariableOp"
      input: "v"
      input: "twice:z:0"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    control_ret { key: "assign" value: "assign" }
  )pb";
  const GraphDef graph = ParseGraph(PlaceholderText("x", "DT_FLOAT") + R"pb(
                                      node {
                                        name: "v"
                                        op: "VarHandleOp"
                                        attr {
                                          key: "dtype"
                                          value { type: DT_FLOAT }
                                        }
                                        attr {
                                          key: "shape"
                                          value { shape {} }
                                        }
                                        attr {
                                          key: "shared_name"
                                          value { s: "v" }
                                        }
                                      }
                                      node {
                                        name: "call"
                                        op: "StatefulPartitionedCall"
                                        input: "v"
                                        input: "x"
                                        attr {
                                          key: "Tin"
                                          value { list { type: DT_RESOURCE type: DT_FLOAT } }
                                        }
                                        attr {
                                          key: "Tout"
                                          value { list {} }
                                        }
                                        attr {
                                          key: "f"
                                          value { func { name: "AssignDouble" } }
                                        }
                                      }
                                      node {
                                        name: "read"
                                        op: "ReadVariableOp"
                                        input: "v"
                                        input: "^call"
                                        attr {
                                          key: "dtype"
                                          value { type: DT_FLOAT }
                                        }
                                      }
                                    )pb",
                                    {kAssignDouble});
  auto out = RunGraph(graph, {{"x", Tensor::Scalar<float>(21)}}, {"read"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 42);
}

// A call's control inputs hold back its body, even nodes without inputs.
TEST(FunctionInlineTest, ControlInputsOfTheCallReachTheBody) {
  constexpr char kConstant[] = R"pb(
    signature {
      name: "Seven"
      output_arg { name: "y" type: DT_FLOAT }
    }
    node_def {
      name: "c"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_FLOAT
            tensor_shape {}
            float_val: 7
          }
        }
      }
    }
    ret { key: "y" value: "c:output:0" }
  )pb";
  const GraphDef graph = ParseGraph(R"pb(
                                      node { name: "first" op: "NoOp" }
                                      node { name: "call" op: "Seven" input: "^first" }
                                    )pb",
                                    {kConstant});
  auto inlined = InlineFunctionCalls(graph, StandardOps());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  bool found = false;
  for (const NodeDef& node : inlined->node()) {
    if (node.name() == "call/c") {
      found = true;
      EXPECT_THAT(node.input(), ::testing::ElementsAre("^call/input_control_node"));
    }
  }
  EXPECT_TRUE(found);
  auto out = RunGraph(graph, {}, {"call"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 7);
}

TEST(FunctionInlineTest, ErrorsNameTheNodeAndTheFunction) {
  const std::string x = PlaceholderText("x", "DT_FLOAT");
  const auto import = [](const GraphDef& graph) {
    return ImportGraphDef(graph, StandardOps()).status();
  };
  // Not defined.
  EXPECT_THAT(import(ParseGraph(x + R"pb(
                                  node {
                                    name: "call"
                                    op: "PartitionedCall"
                                    input: "x"
                                    attr {
                                      key: "Tin"
                                      value { list { type: DT_FLOAT } }
                                    }
                                    attr {
                                      key: "Tout"
                                      value { list { type: DT_FLOAT } }
                                    }
                                    attr {
                                      key: "f"
                                      value { func { name: "Missing" } }
                                    }
                                  })pb",
                                {})),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("node 'call': function 'Missing' is not defined")));
  // Argument count.
  EXPECT_THAT(
      import(ParseGraph(x + R"pb(node { name: "call" op: "Twice" input: "x" input: "x" })pb",
                        {kSquarePlus, kTwice})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("node 'call' calls function 'Twice': it passes 2 arguments; "
                         "the function takes 1")));
  // Argument type, through Tin.
  EXPECT_THAT(import(ParseGraph(x + R"pb(
                                  node {
                                    name: "call"
                                    op: "PartitionedCall"
                                    input: "x"
                                    attr {
                                      key: "Tin"
                                      value { list { type: DT_FLOAT } }
                                    }
                                    attr {
                                      key: "Tout"
                                      value { list { type: DT_DOUBLE } }
                                    }
                                    attr {
                                      key: "f"
                                      value {
                                        func {
                                          name: "SquarePlus"
                                          attr {
                                            key: "T"
                                            value { type: DT_FLOAT }
                                          }
                                        }
                                      }
                                    }
                                  })pb",
                                {kSquarePlus})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("its Tout is [double] but the function's is [float]")));
  // Argument type, from what feeds it.
  EXPECT_THAT(import(ParseGraph(PlaceholderText("i", "DT_INT32") +
                                    R"pb(node { name: "call" op: "Twice" input: "i" })pb",
                                {kSquarePlus, kTwice})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'call/once/sq' (Mul): input 0 expected type float but "
                                 "got int32 from 'i'")));
  // A missing attr.
  EXPECT_THAT(import(ParseGraph(x + R"pb(node { name: "call" op: "SquarePlus" input: "x" })pb",
                                {kSquarePlus})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'SquarePlus': the call gives no value for attr 'T'")));
}

TEST(FunctionInlineTest, BadLibrariesAreRefused) {
  const std::string x = PlaceholderText("x", "DT_FLOAT");
  const std::string call = x + R"pb(node { name: "call" op: "F" input: "x" })pb";
  const auto import = [&](const char* function) {
    return ImportGraphDef(ParseGraph(call, {function}), StandardOps()).status();
  };
  EXPECT_THAT(import(R"pb(signature {
                            name: "F"
                            input_arg { name: "a" type: DT_FLOAT }
                            output_arg { name: "b" type: DT_FLOAT }
                          })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'F': output 'b' has no return")));
  EXPECT_THAT(import(R"pb(signature {
                            name: "F"
                            input_arg { name: "a" type: DT_FLOAT }
                            output_arg { name: "b" type: DT_FLOAT }
                          }
                          ret { key: "b" value: "nowhere:y:0" })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'F': return 'b' names 'nowhere:y:0', which is not in "
                                 "the function")));
  EXPECT_THAT(import(R"pb(signature {
                            name: "F"
                            input_arg { name: "a" type: DT_FLOAT }
                            output_arg { name: "b" type: DT_INT32 }
                          }
                          ret { key: "b" value: "a" })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("return 'b' ('a') is float, the signature says int32")));
  EXPECT_THAT(import(R"pb(signature {
                            name: "F"
                            input_arg { name: "a" type: DT_FLOAT }
                            output_arg { name: "b" type: DT_FLOAT }
                          }
                          node_def {
                            name: "n"
                            op: "Neg"
                            input: "a:0:1"
                            attr {
                              key: "T"
                              value { type: DT_FLOAT }
                            }
                          }
                          ret { key: "b" value: "n:y:0" })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'F': node 'n': input 'a:0:1' names no argument")));
  // The library is checked even where nothing calls it.
  EXPECT_THAT(import(R"pb(signature { name: "Neg" })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'Neg': it has the name of an op")));
}

// A function that uses an op rill lacks does not stop the graph: the steps
// that do not call it run, and one that does says what is missing.
TEST(FunctionInlineTest, AFunctionWithAnUnregisteredOpFailsOnlyTheStepsThatCallIt) {
  constexpr char kF[] = R"pb(
    signature {
      name: "F"
      input_arg { name: "a" type: DT_FLOAT }
      output_arg { name: "b" type: DT_FLOAT }
    }
    node_def { name: "n" op: "NoSuchOp" input: "a" }
    ret { key: "b" value: "n:y:0" }
  )pb";
  const GraphDef graph = ParseGraph(PlaceholderText("x", "DT_FLOAT") + R"pb(
                                      node { name: "call" op: "F" input: "x" }
                                      node {
                                        name: "neg"
                                        op: "Neg"
                                        input: "x"
                                        attr {
                                          key: "T"
                                          value { type: DT_FLOAT }
                                        }
                                      }
                                    )pb",
                                    {kF});
  auto session = NewSession(SessionOptions(), graph);
  ASSERT_TRUE(session.ok()) << session.status();
  auto neg = (*session)->Run({{"x", Tensor::Scalar<float>(2)}}, {"neg"});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ((*neg)[0].scalar<float>(), -2);
  EXPECT_THAT((*session)->Run({{"x", Tensor::Scalar<float>(2)}}, {"call"}).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("node 'call': function 'F': node 'n': Op type not registered "
                                 "'NoSuchOp'")));
}

TEST(FunctionInlineTest, RecursionIsAnErrorNotAHang) {
  constexpr char kF[] = R"pb(
    signature {
      name: "F"
      input_arg { name: "a" type: DT_FLOAT }
      output_arg { name: "b" type: DT_FLOAT }
    }
    node_def { name: "g" op: "G" input: "a" }
    ret { key: "b" value: "g:b:0" }
  )pb";
  constexpr char kG[] = R"pb(
    signature {
      name: "G"
      input_arg { name: "a" type: DT_FLOAT }
      output_arg { name: "b" type: DT_FLOAT }
    }
    node_def { name: "f" op: "F" input: "a" }
    ret { key: "b" value: "f:b:0" }
  )pb";
  const GraphDef graph = ParseGraph(
      PlaceholderText("x", "DT_FLOAT") + R"pb(node { name: "call" op: "F" input: "x" })pb",
      {kF, kG});
  EXPECT_THAT(ImportGraphDef(graph, StandardOps()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'call/g/f' calls function 'F': it calls itself: "
                                 "F -> G -> F")));
}

}  // namespace
}  // namespace rill
