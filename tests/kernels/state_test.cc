#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/framework/resource_mgr.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::RandomTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorEq;
using ::rill::testing::TensorNear;
using ::rill::testing::ValueOf;
using ::rill::testing::VarHolding;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(Variable, CreatesAnUninitializedVariableNamedAfterTheNode) {
  for (const char* op : {"Variable", "VariableV2"}) {
    KernelTester t(op);
    t.Attr("shape", PartialTensorShape({2, 3})).Attr("dtype", DT_DOUBLE);
    ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> out, t.RunValues());
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Var> var,
                         t.resource_manager().Lookup<Var>(kDefaultContainer, "kernel_under_test"));
    EXPECT_EQ(var->dtype(), DT_DOUBLE);
    EXPECT_FALSE(var->is_initialized());
    ASSERT_TRUE(out[0].is_ref());
    EXPECT_EQ(out[0].ref, var->tensor());
    EXPECT_EQ(out[0].ref_mu, var->mu());
  }
}

TEST(Variable, RunsAgainstTheSameVariable) {
  KernelTester t("VariableV2");
  t.Attr("shape", PartialTensorShape({2})).Attr("dtype", DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> first, t.RunValues());
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> second, t.RunValues());
  EXPECT_EQ(first[0].ref, second[0].ref);
}

TEST(Variable, UsesContainerAndSharedName) {
  KernelTester t("VariableV2");
  t.Attr("shape", PartialTensorShape({1}))
      .Attr("dtype", DT_INT64)
      .Attr("container", "experiment")
      .Attr("shared_name", "weights");
  ASSERT_OK(t.RunValues());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Var> var,
                       t.resource_manager().Lookup<Var>("experiment", "weights"));
  EXPECT_EQ(var->dtype(), DT_INT64);
}

TEST(Variable, RejectsASharedVariableOfAnotherDtype) {
  KernelTester a("VariableV2");
  a.Attr("shape", PartialTensorShape({1})).Attr("dtype", DT_FLOAT).Attr("shared_name", "w");
  ASSERT_OK(a.RunValues());
  KernelTester b("VariableV2");
  b.WithResourceMgr(a.shared_resource_manager())
      .Attr("shape", PartialTensorShape({1}))
      .Attr("dtype", DT_INT32)
      .Attr("shared_name", "w");
  EXPECT_THAT(b.RunValues(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("w"), HasSubstr("float"), HasSubstr("int32"))));
}

TEST(Assign, InitializesWithACopyOfTheValueAndForwardsTheReference) {
  Var var(DT_FLOAT);
  const Tensor value = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  KernelTester t("Assign");
  t.RefInput(&var).Input(value);
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> out, t.RunValues());
  EXPECT_EQ(out[0].ref, var.tensor());
  const Tensor stored = ValueOf(var);
  EXPECT_THAT(stored, TensorEq(value));
  EXPECT_FALSE(stored.SharesBufferWith(value));
}

TEST(Assign, OverwritesInPlaceWhenTheShapeAgrees) {
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_UINT8, DT_BOOL}) {
    SCOPED_TRACE(DataTypeString(dtype));
    std::shared_ptr<Var> var = VarHolding(RandomTensor(dtype, TensorShape({3, 4}), 1, 0, 10));
    const Tensor before = ValueOf(*var);
    const Tensor value = RandomTensor(dtype, TensorShape({3, 4}), 2, 0, 10);
    KernelTester t("Assign");
    t.RefInput(var.get()).Input(value);
    ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
    EXPECT_THAT(out, TensorEq(value));
    EXPECT_TRUE(ValueOf(*var).SharesBufferWith(before));
    EXPECT_THAT(before, TensorEq(value));
  }
}

TEST(Assign, AssignsStrings) {
  Var var(DT_STRING);
  KernelTester t("Assign");
  t.RefInput(&var).Input(MakeTensor<std::string>({2}, {"a", "bc"}));
  ASSERT_OK(t.Run());
  EXPECT_THAT(ValueOf(var), TensorEq(MakeTensor<std::string>({2}, {"a", "bc"})));
}

TEST(Assign, ValidateShapeRejectsAnotherShapeNamingBoth) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({2}, {1, 2}));
  KernelTester t("Assign");
  t.RefInput(var.get(), "w").Input(MakeTensor<float>({3}, {1, 2, 3})).UnknownInputShapes();
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("w"), HasSubstr("[2]"), HasSubstr("[3]"))));
  EXPECT_THAT(ValueOf(*var), TensorEq(MakeTensor<float>({2}, {1, 2})));
}

TEST(Assign, WithoutValidateShapeTakesTheNewShape) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({2}, {1, 2}));
  KernelTester t("Assign");
  t.RefInput(var.get()).Input(MakeTensor<float>({3}, {4, 5, 6})).Attr("validate_shape", false);
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(out, TensorEq(MakeTensor<float>({3}, {4, 5, 6})));
  EXPECT_THAT(ValueOf(*var), TensorEq(MakeTensor<float>({3}, {4, 5, 6})));
}

template <typename T>
Tensor Reference(const Tensor& var, const Tensor& value, bool add) {
  Tensor out = var.DeepCopy();
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    out.data<T>()[i] =
        add ? T(var.data<T>()[i] + value.data<T>()[i]) : T(var.data<T>()[i] - value.data<T>()[i]);
  }
  return out;
}

template <typename T>
void CheckAssignUpdate(bool add, bool use_locking) {
  const DataType dtype = kDataTypeOf<T>;
  SCOPED_TRACE(absl::StrFormat("%s %s locking=%d", add ? "AssignAdd" : "AssignSub",
                               DataTypeString(dtype), use_locking));
  const TensorShape shape({17, 33});
  const Tensor initial = RandomTensor(dtype, shape, 3, -50, 50);
  const Tensor value = RandomTensor(dtype, shape, 4, -50, 50);
  std::shared_ptr<Var> var = VarHolding(initial);
  KernelTester t(add ? "AssignAdd" : "AssignSub");
  t.RefInput(var.get()).Input(value).Attr("use_locking", use_locking);
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> out, t.RunValues(4));
  EXPECT_EQ(out[0].ref, var->tensor());
  EXPECT_THAT(ValueOf(*var), TensorNear(Reference<T>(initial, value, add), 1e-6, 1e-6));
}

TEST(AssignAddSub, MatchAReferenceLoop) {
  for (bool add : {true, false}) {
    for (bool locking : {false, true}) {
      CheckAssignUpdate<float>(add, locking);
      CheckAssignUpdate<double>(add, locking);
      CheckAssignUpdate<int32_t>(add, locking);
      CheckAssignUpdate<int64_t>(add, locking);
    }
  }
}

TEST(AssignAddSub, UninitializedVariableIsFailedPreconditionNamingIt) {
  for (const char* op : {"AssignAdd", "AssignSub"}) {
    Var var(DT_FLOAT);
    KernelTester t(op);
    t.RefInput(&var, "layer/w").Input(MakeTensor<float>({2}, {1, 2}));
    EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                  HasSubstr("Attempting to use uninitialized value layer/w")));
  }
}

TEST(AssignAddSub, ShapeMismatchAtRunTimeIsInvalidArgument) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<int32_t>({2}, {1, 2}));
  KernelTester t("AssignAdd");
  t.RefInput(var.get(), "counter").Input(MakeTensor<int32_t>({3}, {1, 2, 3})).UnknownInputShapes();
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("counter"), HasSubstr("[2]"), HasSubstr("[3]"))));
}

TEST(IsVariableInitialized, FollowsTheFirstAssignment) {
  Var var(DT_FLOAT);
  KernelTester check("IsVariableInitialized");
  check.RefInput(&var);
  EXPECT_THAT(check.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(false))));
  KernelTester assign("Assign");
  assign.RefInput(&var).Input(MakeTensor<float>({1}, {7}));
  ASSERT_OK(assign.Run());
  EXPECT_THAT(check.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(true))));
}

KernelTester HandleOp(const std::string& shared_name = "") {
  KernelTester t("VarHandleOp");
  t.Attr("dtype", DT_FLOAT).Attr("shape", PartialTensorShape({2}));
  if (!shared_name.empty()) t.Attr("shared_name", shared_name);
  return t;
}

TEST(VarHandleOp, OutputsAScalarHandleNamingTheVariable) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  EXPECT_EQ(handle.dtype(), DT_RESOURCE);
  EXPECT_EQ(handle.dims(), 0);
  EXPECT_EQ(handle.scalar<ResourceHandleProto>().container(), kDefaultContainer);
  EXPECT_EQ(handle.scalar<ResourceHandleProto>().name(), "w");
  ASSERT_OK_AND_ASSIGN(Tensor unnamed, HandleOp().RunOne());
  EXPECT_EQ(unnamed.scalar<ResourceHandleProto>().name(), "kernel_under_test");
}

TEST(ResourceVariable, AssignThenReadRoundTrips) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  const Tensor value = RandomTensor(DT_FLOAT, TensorShape({2, 5}), 5);
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input(value);
  ASSERT_OK(assign.Run());
  KernelTester read("ReadVariableOp");
  read.WithResourceMgr(resources).Input(handle).Attr("dtype", DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(Tensor got, read.RunOne());
  EXPECT_THAT(got, TensorEq(value));
  EXPECT_FALSE(got.SharesBufferWith(value));
}

TEST(ResourceVariable, ReadKeepsItsValueAfterAReassignment) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester assign1("AssignVariableOp");
  assign1.WithResourceMgr(resources).Input(handle).Input(MakeTensor<double>({2}, {1, 2}));
  ASSERT_OK(assign1.Run());
  KernelTester read("ReadVariableOp");
  read.WithResourceMgr(resources).Input(handle).Attr("dtype", DT_DOUBLE);
  ASSERT_OK_AND_ASSIGN(Tensor first, read.RunOne());
  KernelTester assign2("AssignVariableOp");
  assign2.WithResourceMgr(resources).Input(handle).Input(MakeTensor<double>({3}, {3, 4, 5}));
  ASSERT_OK(assign2.Run());
  EXPECT_THAT(first, TensorEq(MakeTensor<double>({2}, {1, 2})));
  EXPECT_THAT(read.RunOne(),
              ::rill::testing::IsOkAndHolds(TensorEq(MakeTensor<double>({3}, {3, 4, 5}))));
}

// The optimizers' iteration counters and Keras's metrics: += and -= on a
// resource variable, and the errors for a missing one or a wrong shape.
TEST(ResourceVariable, AssignAddAndSubUpdateInPlaceOfTheValue) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester missing("AssignAddVariableOp");
  missing.WithResourceMgr(resources).Input(handle).Input(MakeTensor<int64_t>({}, {1}));
  EXPECT_THAT(missing.Run(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("w")));
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({2}, {1, 2}));
  ASSERT_OK(assign.Run());
  KernelTester read("ReadVariableOp");
  read.WithResourceMgr(resources).Input(handle).Attr("dtype", DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(Tensor before, read.RunOne());
  KernelTester add("AssignAddVariableOp");
  add.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({2}, {10, 20}));
  ASSERT_OK(add.Run());
  KernelTester sub("AssignSubVariableOp");
  sub.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({2}, {0.5, 0.5}));
  ASSERT_OK(sub.Run());
  EXPECT_THAT(read.RunOne(),
              ::rill::testing::IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {10.5, 21.5}))));
  EXPECT_THAT(before,
              TensorEq(MakeTensor<float>({2}, {1, 2})));  // An earlier read keeps its value.
  KernelTester wrong("AssignAddVariableOp");
  wrong.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({3}, {1, 1, 1}));
  EXPECT_THAT(wrong.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape [2]")));
}

TEST(ResourceVariable, ReadOfAMissingVariableIsFailedPreconditionNamingIt) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("never_assigned").RunOne());
  KernelTester read("ReadVariableOp");
  read.Input(handle).Attr("dtype", DT_FLOAT);
  EXPECT_THAT(read.Run(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("never_assigned")));
}

TEST(ResourceVariable, DtypeMismatchIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({1}, {1}));
  ASSERT_OK(assign.Run());
  KernelTester read("ReadVariableOp");
  read.WithResourceMgr(resources).Input(handle).Attr("dtype", DT_INT32);
  EXPECT_THAT(read.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr("float"), HasSubstr("int32"))));
  KernelTester assign_int("AssignVariableOp");
  assign_int.WithResourceMgr(resources).Input(handle).Input(MakeTensor<int32_t>({1}, {1}));
  EXPECT_THAT(assign_int.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         AllOf(HasSubstr("float"), HasSubstr("int32"))));
}

TEST(VarIsInitializedOp, FalseUntilTheFirstAssignment) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester check("VarIsInitializedOp");
  check.WithResourceMgr(resources).Input(handle);
  // No variable exists yet: not an error, just uninitialized.
  EXPECT_THAT(check.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(false))));
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({2}, {1, 2}));
  ASSERT_OK(assign.Run());
  EXPECT_THAT(check.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(true))));
}

TEST(VarIsInitializedOp, AVariableMadeButNotAssignedIsUninitialized) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  ASSERT_OK(resources
                ->LookupOrCreate<Var>(kDefaultContainer, "w",
                                      []() -> absl::StatusOr<std::shared_ptr<Var>> {
                                        return std::make_shared<Var>(DT_FLOAT);
                                      })
                .status());
  KernelTester check("VarIsInitializedOp");
  check.WithResourceMgr(resources).Input(handle);
  EXPECT_THAT(check.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(Tensor::Scalar(false))));
}

TEST(ResourceVariable, ValidateShapeRejectsAnotherShape) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input(MakeTensor<float>({2}, {1, 2}));
  ASSERT_OK(assign.Run());
  KernelTester reshape("AssignVariableOp");
  reshape.WithResourceMgr(resources)
      .Input(handle)
      .Input(MakeTensor<float>({3}, {1, 2, 3}))
      .Attr("validate_shape", true);
  EXPECT_THAT(reshape.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                      AllOf(HasSubstr("w"), HasSubstr("[2]"), HasSubstr("[3]"))));
}

// ResourceGather: rows of the variable (what a Keras Embedding reads), an
// index out of range named.
TEST(ResourceVariable, ResourceGatherTakesRows) {
  ASSERT_OK_AND_ASSIGN(Tensor handle, HandleOp("w").RunOne());
  auto resources = std::make_shared<ResourceMgr>();
  KernelTester assign("AssignVariableOp");
  assign.WithResourceMgr(resources).Input(handle).Input(
      MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  ASSERT_OK(assign.Run());
  KernelTester gather("ResourceGather");
  gather.WithResourceMgr(resources)
      .Attr("dtype", DT_FLOAT)
      .Input(handle)
      .Input(MakeTensor<int32_t>({2, 2}, {2, 0, 0, 1}));
  EXPECT_THAT(gather.RunOne(), ::rill::testing::IsOkAndHolds(TensorEq(
                                   MakeTensor<float>({2, 2, 2}, {5, 6, 1, 2, 1, 2, 3, 4}))));
  KernelTester outside("ResourceGather");
  outside.WithResourceMgr(resources)
      .Attr("dtype", DT_FLOAT)
      .Input(handle)
      .Input(MakeTensor<int64_t>({1}, {3}));
  EXPECT_THAT(outside.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         ::testing::HasSubstr("indices[0] = 3 is not in [0, 3)")));
}

}  // namespace
}  // namespace rill
