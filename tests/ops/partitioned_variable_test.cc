// PartitionedVariable through a Session: TensorFlow's partitioners and the
// parts they cut, the whole value and its gradient per part, gathers per
// part, and clear errors for partitions that cannot be.
#include "ops/partitioned_variable.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/attr_value_util.h"
#include "graph/node_builder.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<int64_t> Cut(const Partitioner& partitioner, std::vector<int64_t> dims,
                         DataType dtype = DT_FLOAT) {
  return partitioner(TensorShape(dims), dtype).value();
}

TEST(PartitionerTest, FixedSizeCutsOneAxisIntoAtMostItsLength) {
  EXPECT_THAT(Cut(FixedSizePartitioner(2), {784, 128}), ElementsAre(2, 1));
  EXPECT_THAT(Cut(FixedSizePartitioner(3, 1), {784, 128}), ElementsAre(1, 3));
  EXPECT_THAT(Cut(FixedSizePartitioner(5), {3, 4}), ElementsAre(3, 1));
  EXPECT_THAT(FixedSizePartitioner(2, 2)(TensorShape({3, 4}), DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 2")));
  EXPECT_THAT(FixedSizePartitioner(0)(TensorShape({3, 4}), DT_FLOAT),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_shards 0")));
}

// The counts TensorFlow's min_max_variable_partitioner gives.
TEST(PartitionerTest, MinMaxKeepsEachPartAboveTheMinimumSize) {
  // 401,408 bytes in slices of 256 KiB: 2.
  EXPECT_THAT(Cut(MinMaxVariablePartitioner(8), {784, 128}), ElementsAre(2, 1));
  // 4 MB would take 16; at most 3.
  EXPECT_THAT(Cut(MinMaxVariablePartitioner(3), {1000, 1000}), ElementsAre(3, 1));
  // No more parts than rows.
  EXPECT_THAT(Cut(MinMaxVariablePartitioner(8), {2, 1000000}), ElementsAre(2, 1));
  // Small variables stay whole.
  EXPECT_THAT(Cut(MinMaxVariablePartitioner(8), {10, 10}), ElementsAre(1, 1));
  // Strings count bytes_per_string_element each: 40,000 * 16 bytes in
  // slices of 100,000.
  EXPECT_THAT(Cut(MinMaxVariablePartitioner(100, 0, 100000), {40000}, DT_STRING), ElementsAre(7));
  EXPECT_THAT(Cut(MinMaxVariablePartitioner(100, 0, 100000, 1), {40000}, DT_STRING),
              ElementsAre(1));
}

// A [7, 2] float variable whose element (r, c) is 10 r + c, built part by
// part from each part's slice.
PartitionedVariable RowsTimesTen(const Scope& scope, const Partitioner& partitioner) {
  return PartitionedVariable(
      scope, "w", TensorShape({7, 2}), DT_FLOAT, partitioner,
      [](const Scope&, const SaveSliceInfo& slice) {
        std::vector<float> values;
        for (int64_t r = 0; r < slice.var_shape[0]; ++r) {
          for (int64_t c = 0; c < slice.var_shape[1]; ++c) {
            values.push_back(10.f * (slice.var_offset[0] + r) +
                             static_cast<float>(slice.var_offset[1] + c));
          }
        }
        return ops::Input(Tensor::FromVector<float>(values, TensorShape(slice.var_shape)));
      });
}

std::unique_ptr<Session> Initialized(const Scope& scope) {
  GlobalVariablesInitializer(scope);
  std::unique_ptr<Session> session =
      NewSession(SessionOptions(), scope.ToGraphDef().value()).value();
  EXPECT_OK(session->Run({}, {}, {"init"}).status());
  return session;
}

TEST(PartitionedVariableTest, CutsAsTensorFlowDoesAndJoinsThePartsAgain) {
  const Scope scope = ops::NewRootScope();
  const PartitionedVariable w = RowsTimesTen(scope, FixedSizePartitioner(3));
  ASSERT_OK(scope.status());
  EXPECT_EQ(w.name(), "w");
  std::vector<std::string> names;
  std::vector<std::string> specs;
  for (const Variable& part : w.parts()) {
    names.push_back(part.name());
    specs.push_back(part.save_slice_info()->Spec());
    EXPECT_EQ(part.save_slice_info()->full_name, "w");
  }
  // The first 7 % 3 parts take a row more.
  EXPECT_THAT(names, ElementsAre("w/part_0", "w/part_1", "w/part_2"));
  EXPECT_THAT(specs, ElementsAre("7 2 0,3:0,2", "7 2 3,2:0,2", "7 2 5,2:0,2"));
  EXPECT_EQ(w.value().name(), "w/ConcatPartitions/concat");
  // The slice is in the graph, where a saver built from it finds it.
  EXPECT_THAT(SaveSliceInfoOf(*w.parts()[1].ref().node()),
              IsOkAndHolds(::testing::Optional(*w.parts()[1].save_slice_info())));

  std::unique_ptr<Session> session = Initialized(scope);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {w.value().name()}));
  EXPECT_THAT(Values<float>(out[0]),
              ElementsAre(0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 60, 61));
}

TEST(PartitionedVariableTest, EachPartGetsItsSliceOfTheGradient) {
  const Scope scope = ops::NewRootScope();
  const PartitionedVariable w = RowsTimesTen(scope, FixedSizePartitioner(2));
  // d/dw sum(w * w) = 2 w: each part's gradient is twice its own rows.
  const Output loss = ops::Sum(scope, ops::Mul(scope, w, w), ops::Input({0, 1}));
  ASSERT_OK_AND_ASSIGN(const std::vector<Output> grads,
                       AddGradients(scope, {loss}, {w.parts()[0].value(), w.parts()[1].value()}));
  std::unique_ptr<Session> session = Initialized(scope);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       session->Run({}, {grads[0].name(), grads[1].name()}));
  EXPECT_EQ(out[0].shape(), TensorShape({4, 2}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(0, 2, 20, 22, 40, 42, 60, 62));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(80, 82, 100, 102, 120, 122));
}

TEST(PartitionedVariableTest, GathersEachIdFromThePartThatHoldsIt) {
  for (int parts : {1, 2, 3}) {
    const Scope scope = ops::NewRootScope();
    const PartitionedVariable w = RowsTimesTen(scope, FixedSizePartitioner(parts));
    const Output ids = ops::Placeholder(scope.WithOpName("ids"), DT_INT32);
    const Output rows = PartitionedGather(scope, w, ids);
    ASSERT_OK(scope.status());
    std::unique_ptr<Session> session = Initialized(scope);
    ASSERT_OK_AND_ASSIGN(
        std::vector<Tensor> out,
        session->Run(
            {{"ids", Tensor::FromVector<int32_t>({6, 0, 3, 3, 2, 5}, TensorShape({2, 3}))}},
            {rows.name()}));
    EXPECT_EQ(out[0].shape(), TensorShape({2, 3, 2})) << parts << " parts";
    EXPECT_THAT(Values<float>(out[0]), ElementsAre(60, 61, 0, 1, 30, 31, 30, 31, 20, 21, 50, 51))
        << parts << " parts";
    // Ids outside the variable are refused by the part at that end.
    for (int32_t bad : {7, -1}) {
      EXPECT_THAT(session->Run({{"ids", Tensor::FromVector<int32_t>({1, bad}, TensorShape({2}))}},
                               {rows.name()}),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Gather")))
          << parts << " parts, id " << bad;
    }
  }
}

TEST(PartitionedVariableTest, GatherRunsBesideEachPart) {
  const Scope scope = ops::NewRootScope();
  const PartitionedVariable w = RowsTimesTen(scope, FixedSizePartitioner(2));
  PartitionedGather(scope, w, ops::Placeholder(scope.WithOpName("ids"), DT_INT64));
  ASSERT_OK_AND_ASSIGN(GraphDef graph, scope.ToGraphDef());
  std::vector<std::string> gathers;
  for (const NodeDef& node : graph.node()) {
    if (node.op() != "Gather" || node.input(0).find("part_") == std::string::npos) continue;
    const AttrValue& groups = node.attr().at("_class");
    gathers.push_back(node.input(0) + " " + groups.list().s(0));
  }
  EXPECT_THAT(gathers, ::testing::UnorderedElementsAre("w/part_0/read loc:@w/part_0",
                                                       "w/part_1/read loc:@w/part_1"));
}

TEST(PartitionedVariableTest, RefusesPartitionsThatCannotBe) {
  const auto errors = [](const Partitioner& partitioner) {
    const Scope scope = ops::NewRootScope();
    const PartitionedVariable w = RowsTimesTen(scope, partitioner);
    EXPECT_FALSE(w.ok());
    return scope.status();
  };
  const auto fixed = [](std::vector<int64_t> partitions) {
    return [=](const TensorShape&, DataType) -> absl::StatusOr<std::vector<int64_t>> {
      return partitions;
    };
  };
  EXPECT_THAT(errors(fixed({2})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one entry per dimension")));
  EXPECT_THAT(errors(fixed({2, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than one dimension")));
  EXPECT_THAT(errors(fixed({8, 1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'w' of shape [7,2]")));
  EXPECT_THAT(errors(fixed({0, 1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 0")));
  EXPECT_THAT(errors(FixedSizePartitioner(2, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 3")));

  // An initializer that ignores the part's shape.
  const Scope scope = ops::NewRootScope();
  const PartitionedVariable w(
      scope, "v", TensorShape({4}), DT_FLOAT, FixedSizePartitioner(2),
      [](const Scope&, const SaveSliceInfo&) {
        return ops::Input(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4})));
      });
  EXPECT_FALSE(w.ok());
  EXPECT_THAT(scope.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("variable 'v/part_0': its slice 'v 4 0,2'")));
}

TEST(SaveSliceInfoTest, MalformedAttrsAreNamed) {
  for (const std::string bad : {"w", " 4 0,2", "w 4 0,9", "w 4", "w x"}) {
    const Scope scope = ops::NewRootScope();
    NodeBuilder builder(scope.WithOpName("v"), "VariableV2");
    const Operation v = builder.Attr("shape", MakeAttr(PartialTensorShape({2})))
                            .Attr("dtype", MakeAttr(DT_FLOAT))
                            .Attr(kSaveSliceInfoAttr, MakeAttr(bad))
                            .Finalize();
    ASSERT_OK(scope.status());
    EXPECT_THAT(SaveSliceInfoOf(*v.node()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("variable 'v': attr")))
        << bad;
  }
}

}  // namespace
}  // namespace rill
