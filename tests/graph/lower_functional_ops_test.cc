// Functional If, Case and While as TensorFlow 2 writes them, lowered to
// the primitives on import and run by a Session; cases after TensorFlow's
// lower_if_op_test.cc, lower_case_op_test.cc and lower_while_op_test.cc.
#include "graph/lower_functional_ops.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "graph/function_inline.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "ops/registry.h"
#include "runtime/session.h"
#include "tests/graph/graph_text.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::ParseGraph;
using ::rill::testing::PlaceholderText;
using ::rill::testing::RunGraph;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

// x * 2.
constexpr char kDouble[] = R"pb(
  signature {
    name: "Double"
    input_arg { name: "x" type: DT_INT32 }
    output_arg { name: "y" type: DT_INT32 }
  }
  node_def {
    name: "sum"
    op: "AddV2"
    input: "x"
    input: "x"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  ret { key: "y" value: "sum:z:0" }
)pb";

// x + 10: its constant must run only when its branch does.
constexpr char kPlusTen[] = R"pb(
  signature {
    name: "PlusTen"
    input_arg { name: "x" type: DT_INT32 }
    output_arg { name: "y" type: DT_INT32 }
  }
  node_def {
    name: "ten"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {}
          int_val: 10
        }
      }
    }
  }
  node_def {
    name: "sum"
    op: "AddV2"
    input: "x"
    input: "ten:output:0"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  ret { key: "y" value: "sum:z:0" }
)pb";

// -x.
constexpr char kNegate[] = R"pb(
  signature {
    name: "Negate"
    input_arg { name: "x" type: DT_INT32 }
    output_arg { name: "y" type: DT_INT32 }
  }
  node_def {
    name: "neg"
    op: "Neg"
    input: "x"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  ret { key: "y" value: "neg:y:0" }
)pb";

// i < 5.
constexpr char kLessThanFive[] = R"pb(
  signature {
    name: "LessThanFive"
    input_arg { name: "i" type: DT_INT32 }
    input_arg { name: "acc" type: DT_INT32 }
    output_arg { name: "keep_going" type: DT_BOOL }
  }
  node_def {
    name: "five"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {}
          int_val: 5
        }
      }
    }
  }
  node_def {
    name: "less"
    op: "Less"
    input: "i"
    input: "five:output:0"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  ret { key: "keep_going" value: "less:z:0" }
)pb";

// (i + 1, Double(acc)): a call inside a loop's body.
constexpr char kStep[] = R"pb(
  signature {
    name: "Step"
    input_arg { name: "i" type: DT_INT32 }
    input_arg { name: "acc" type: DT_INT32 }
    output_arg { name: "next_i" type: DT_INT32 }
    output_arg { name: "next_acc" type: DT_INT32 }
  }
  node_def {
    name: "one"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {}
          int_val: 1
        }
      }
    }
  }
  node_def {
    name: "inc"
    op: "AddV2"
    input: "i"
    input: "one:output:0"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  node_def { name: "twice" op: "Double" input: "acc" }
  ret { key: "next_i" value: "inc:z:0" }
  ret { key: "next_acc" value: "twice:y:0" }
)pb";

// (i + 1, acc + 10 when i is odd, else acc * 2): an If inside a loop.
constexpr char kStepWithIf[] = R"pb(
  signature {
    name: "StepWithIf"
    input_arg { name: "i" type: DT_INT32 }
    input_arg { name: "acc" type: DT_INT32 }
    output_arg { name: "next_i" type: DT_INT32 }
    output_arg { name: "next_acc" type: DT_INT32 }
  }
  node_def {
    name: "one"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {}
          int_val: 1
        }
      }
    }
  }
  node_def {
    name: "two"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {}
          int_val: 2
        }
      }
    }
  }
  node_def {
    name: "inc"
    op: "AddV2"
    input: "i"
    input: "one:output:0"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  node_def {
    name: "mod"
    op: "FloorMod"
    input: "i"
    input: "two:output:0"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  node_def {
    name: "odd"
    op: "Equal"
    input: "mod:z:0"
    input: "one:output:0"
    attr {
      key: "T"
      value { type: DT_INT32 }
    }
  }
  node_def {
    name: "choose"
    op: "StatelessIf"
    input: "odd:z:0"
    input: "acc"
    attr {
      key: "Tcond"
      value { type: DT_BOOL }
    }
    attr {
      key: "Tin"
      value { list { type: DT_INT32 } }
    }
    attr {
      key: "Tout"
      value { list { type: DT_INT32 } }
    }
    attr {
      key: "then_branch"
      value { func { name: "PlusTen" } }
    }
    attr {
      key: "else_branch"
      value { func { name: "Double" } }
    }
  }
  ret { key: "next_i" value: "inc:z:0" }
  ret { key: "next_acc" value: "choose:output:0" }
)pb";

// An If node of op `op` (If or StatelessIf): Double when pred, else PlusTen.
std::string IfNode(const std::string& op) {
  return absl::StrReplaceAll(R"pb(
    node {
      name: "if"
      op: "OP"
      input: "pred"
      input: "x"
      attr { key: "Tcond" value { type: DT_BOOL } }
      attr { key: "Tin" value { list { type: DT_INT32 } } }
      attr { key: "Tout" value { list { type: DT_INT32 } } }
      attr { key: "then_branch" value { func { name: "Double" } } }
      attr { key: "else_branch" value { func { name: "PlusTen" } } }
    })pb",
                             {{"OP", op}});
}

// A StatelessWhile over (i, acc) with cond LessThanFive and body `body`.
std::string WhileNode(const std::string& body) {
  return absl::StrReplaceAll(R"pb(
    node {
      name: "loop"
      op: "StatelessWhile"
      input: "i0"
      input: "acc0"
      attr { key: "T" value { list { type: DT_INT32 type: DT_INT32 } } }
      attr { key: "cond" value { func { name: "LessThanFive" } } }
      attr { key: "body" value { func { name: "BODY" } } }
      attr { key: "parallel_iterations" value { i: 10 } }
    })pb",
                             {{"BODY", body}});
}

TEST(LowerFunctionalOpsTest, IfRunsTheBranchItsPredicateChooses) {
  for (const char* op : {"If", "StatelessIf"}) {
    const GraphDef graph = ParseGraph(
        PlaceholderText("pred", "DT_BOOL") + PlaceholderText("x", "DT_INT32") + IfNode(op),
        {kDouble, kPlusTen});
    for (bool pred : {true, false}) {
      auto out = RunGraph(
          graph, {{"pred", Tensor::Scalar<bool>(pred)}, {"x", Tensor::Scalar<int32_t>(3)}}, {"if"});
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ((*out)[0].scalar<int32_t>(), pred ? 6 : 13) << op << " " << pred;
    }
  }
}

TEST(LowerFunctionalOpsTest, IfIsLoweredToSwitchAndMerge) {
  const GraphDef graph = ParseGraph(
      PlaceholderText("pred", "DT_BOOL") + PlaceholderText("x", "DT_INT32") + IfNode("If"),
      {kDouble, kPlusTen});
  auto inlined = InlineFunctionCalls(graph, StandardOps());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  int switches = 0, merges = 0;
  for (const NodeDef& node : inlined->node()) {
    switches += node.op() == "Switch";
    merges += node.op() == "Merge";
    EXPECT_NE(node.op(), "If");
    EXPECT_NE(node.op(), "PartitionedCall");
    EXPECT_NE(node.op(), "StatefulPartitionedCall");
  }
  EXPECT_EQ(switches, 2);  // The predicate's (for the pivots) and the input's.
  EXPECT_EQ(merges, 2);    // The result's and branch_executed.
}

TEST(LowerFunctionalOpsTest, CaseRunsTheIndexedBranchAndTheLastOutOfRange) {
  const GraphDef graph =
      ParseGraph(PlaceholderText("index", "DT_INT32") + PlaceholderText("x", "DT_INT32") + R"pb(
                   node {
                     name: "case"
                     op: "Case"
                     input: "index"
                     input: "x"
                     attr {
                       key: "Tin"
                       value { list { type: DT_INT32 } }
                     }
                     attr {
                       key: "Tout"
                       value { list { type: DT_INT32 } }
                     }
                     attr {
                       key: "branches"
                       value {
                         list {
                           func { name: "Double" }
                           func { name: "PlusTen" }
                           func { name: "Negate" }
                         }
                       }
                     }
                   })pb",
                 {kDouble, kPlusTen, kNegate});
  for (const auto& [index, want] :
       std::vector<std::pair<int, int>>{{0, 6}, {1, 13}, {2, -3}, {7, -3}, {-1, -3}}) {
    auto out = RunGraph(
        graph, {{"index", Tensor::Scalar<int32_t>(index)}, {"x", Tensor::Scalar<int32_t>(3)}},
        {"case"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].scalar<int32_t>(), want) << index;
  }
}

TEST(LowerFunctionalOpsTest, WhileRunsItsBodyUntilItsCondFails) {
  const GraphDef graph = ParseGraph(
      PlaceholderText("i0", "DT_INT32") + PlaceholderText("acc0", "DT_INT32") + WhileNode("Step"),
      {kDouble, kLessThanFive, kStep});
  for (const auto& [i0, want_acc] : std::vector<std::pair<int, int>>{{0, 32}, {3, 4}, {9, 1}}) {
    auto out =
        RunGraph(graph, {{"i0", Tensor::Scalar<int32_t>(i0)}, {"acc0", Tensor::Scalar<int32_t>(1)}},
                 {"loop:0", "loop:1"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].scalar<int32_t>(), std::max(i0, 5)) << i0;
    EXPECT_EQ((*out)[1].scalar<int32_t>(), want_acc) << i0;
  }
}

// acc from 1 over i = 0..4: *2, +10, *2, +10, *2 = 2, 12, 24, 34, 68.
TEST(LowerFunctionalOpsTest, AnIfInsideAWhile) {
  const GraphDef graph =
      ParseGraph(PlaceholderText("i0", "DT_INT32") + PlaceholderText("acc0", "DT_INT32") +
                     WhileNode("StepWithIf"),
                 {kDouble, kPlusTen, kLessThanFive, kStepWithIf});
  auto out =
      RunGraph(graph, {{"i0", Tensor::Scalar<int32_t>(0)}, {"acc0", Tensor::Scalar<int32_t>(1)}},
               {"loop:1"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 68);
}

TEST(LowerFunctionalOpsTest, MalformedNodesAreNamed) {
  const auto import = [](const std::string& text) {
    return ImportGraphDef(ParseGraph(PlaceholderText("x", "DT_INT32") + text, {kDouble, kPlusTen}),
                          StandardOps())
        .status();
  };
  EXPECT_THAT(import(R"pb(node {
                            name: "if"
                            op: "If"
                            input: "x"
                            input: "x"
                            attr {
                              key: "Tcond"
                              value { type: DT_INT32 }
                            }
                            attr {
                              key: "Tin"
                              value { list { type: DT_INT32 } }
                            }
                            attr {
                              key: "Tout"
                              value { list { type: DT_INT32 } }
                            }
                            attr {
                              key: "then_branch"
                              value { func { name: "Double" } }
                            }
                            attr {
                              key: "else_branch"
                              value { func { name: "PlusTen" } }
                            }
                          })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'if' (If): its predicate is int32; only a bool predicate "
                                 "is lowered")));
  EXPECT_THAT(import(R"pb(node {
                            name: "if"
                            op: "If"
                            input: "x"
                            attr {
                              key: "Tcond"
                              value { type: DT_BOOL }
                            }
                            attr {
                              key: "Tin"
                              value { list { type: DT_INT32 } }
                            }
                            attr {
                              key: "Tout"
                              value { list { type: DT_INT32 } }
                            }
                            attr {
                              key: "then_branch"
                              value { func { name: "Double" } }
                            }
                          })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node 'if' (If)")));
  EXPECT_THAT(import(R"pb(node {
                            name: "loop"
                            op: "While"
                            attr {
                              key: "T"
                              value { list {} }
                            }
                            attr {
                              key: "cond"
                              value { func { name: "Double" } }
                            }
                            attr {
                              key: "body"
                              value { func { name: "Double" } }
                            }
                          })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'loop' (While): it has no loop variables")));
}

}  // namespace
}  // namespace rill
