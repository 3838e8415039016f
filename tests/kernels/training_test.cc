#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
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
using ::rill::testing::TensorNear;
using ::rill::testing::ValueOf;
using ::rill::testing::VarHolding;
using ::testing::AllOf;
using ::testing::HasSubstr;

template <typename T>
double Tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

const TensorShape kShape({13, 29});

template <typename T>
void CheckGradientDescent(bool use_locking) {
  SCOPED_TRACE(absl::StrFormat("%s locking=%d", DataTypeString(kDataTypeOf<T>), use_locking));
  const DataType dtype = kDataTypeOf<T>;
  const Tensor initial = RandomTensor(dtype, kShape, 1);
  const Tensor delta = RandomTensor(dtype, kShape, 2);
  const T alpha = T(0.3);
  std::shared_ptr<Var> var = VarHolding(initial);
  KernelTester t("ApplyGradientDescent");
  t.RefInput(var.get())
      .Input(Tensor::Scalar<T>(alpha))
      .Input(delta)
      .Attr("use_locking", use_locking);
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> out, t.RunValues(3));
  EXPECT_EQ(out[0].ref, var->tensor());

  Tensor expected = initial.DeepCopy();
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    expected.data<T>()[i] = initial.data<T>()[i] - alpha * delta.data<T>()[i];
  }
  EXPECT_THAT(ValueOf(*var), TensorNear(expected, Tolerance<T>(), Tolerance<T>()));
}

TEST(ApplyGradientDescent, MatchesAReferenceLoop) {
  for (bool locking : {false, true}) {
    CheckGradientDescent<float>(locking);
    CheckGradientDescent<double>(locking);
  }
}

template <typename T>
void CheckMomentum(bool use_nesterov, bool use_locking) {
  SCOPED_TRACE(absl::StrFormat("%s nesterov=%d locking=%d", DataTypeString(kDataTypeOf<T>),
                               use_nesterov, use_locking));
  const DataType dtype = kDataTypeOf<T>;
  const Tensor var0 = RandomTensor(dtype, kShape, 3);
  const Tensor accum0 = RandomTensor(dtype, kShape, 4);
  const Tensor grad = RandomTensor(dtype, kShape, 5);
  const T lr = T(0.1), momentum = T(0.9);
  std::shared_ptr<Var> var = VarHolding(var0);
  std::shared_ptr<Var> accum = VarHolding(accum0);
  KernelTester t("ApplyMomentum");
  t.RefInput(var.get())
      .RefInput(accum.get())
      .Input(Tensor::Scalar<T>(lr))
      .Input(grad)
      .Input(Tensor::Scalar<T>(momentum))
      .Attr("use_nesterov", use_nesterov)
      .Attr("use_locking", use_locking);
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> out, t.RunValues(3));
  EXPECT_EQ(out[0].ref, var->tensor());

  Tensor want_var = var0.DeepCopy(), want_accum = accum0.DeepCopy();
  for (int64_t i = 0; i < want_var.NumElements(); ++i) {
    const T g = grad.data<T>()[i];
    const T a = accum0.data<T>()[i] * momentum + g;
    want_accum.data<T>()[i] = a;
    want_var.data<T>()[i] -= use_nesterov ? g * lr + a * momentum * lr : lr * a;
  }
  EXPECT_THAT(ValueOf(*accum), TensorNear(want_accum, Tolerance<T>(), Tolerance<T>()));
  EXPECT_THAT(ValueOf(*var), TensorNear(want_var, Tolerance<T>(), Tolerance<T>()));
}

TEST(ApplyMomentum, MatchesAReferenceLoop) {
  for (bool nesterov : {false, true}) {
    for (bool locking : {false, true}) {
      CheckMomentum<float>(nesterov, locking);
      CheckMomentum<double>(nesterov, locking);
    }
  }
}

template <typename T>
void CheckAdam(bool use_nesterov, bool use_locking) {
  SCOPED_TRACE(absl::StrFormat("%s nesterov=%d locking=%d", DataTypeString(kDataTypeOf<T>),
                               use_nesterov, use_locking));
  const DataType dtype = kDataTypeOf<T>;
  const Tensor var0 = RandomTensor(dtype, kShape, 6);
  const Tensor m0 = RandomTensor(dtype, kShape, 7);
  const Tensor v0 = RandomTensor(dtype, kShape, 8, 0.0, 1.0);
  const Tensor grad = RandomTensor(dtype, kShape, 9);
  const T beta1 = T(0.9), beta2 = T(0.999), beta1_power = T(0.81), beta2_power = T(0.998001);
  const T lr = T(0.01), epsilon = T(1e-7);
  std::shared_ptr<Var> var = VarHolding(var0), m = VarHolding(m0), v = VarHolding(v0);
  KernelTester t("ApplyAdam");
  t.RefInput(var.get())
      .RefInput(m.get())
      .RefInput(v.get())
      .Input(Tensor::Scalar<T>(beta1_power))
      .Input(Tensor::Scalar<T>(beta2_power))
      .Input(Tensor::Scalar<T>(lr))
      .Input(Tensor::Scalar<T>(beta1))
      .Input(Tensor::Scalar<T>(beta2))
      .Input(Tensor::Scalar<T>(epsilon))
      .Input(grad)
      .Attr("use_nesterov", use_nesterov)
      .Attr("use_locking", use_locking);
  ASSERT_OK_AND_ASSIGN(std::vector<TensorValue> out, t.RunValues(3));
  EXPECT_EQ(out[0].ref, var->tensor());

  Tensor want_var = var0.DeepCopy(), want_m = m0.DeepCopy(), want_v = v0.DeepCopy();
  const double lr_t = double(lr) * std::sqrt(1 - double(beta2_power)) / (1 - double(beta1_power));
  for (int64_t i = 0; i < want_var.NumElements(); ++i) {
    const double g = grad.data<T>()[i];
    const double mi = m0.data<T>()[i] + (g - m0.data<T>()[i]) * (1 - double(beta1));
    const double vi = v0.data<T>()[i] + (g * g - v0.data<T>()[i]) * (1 - double(beta2));
    const double direction = use_nesterov ? mi * double(beta1) + (1 - double(beta1)) * g : mi;
    want_m.data<T>()[i] = static_cast<T>(mi);
    want_v.data<T>()[i] = static_cast<T>(vi);
    want_var.data<T>()[i] =
        static_cast<T>(var0.data<T>()[i] - lr_t * direction / (std::sqrt(vi) + double(epsilon)));
  }
  EXPECT_THAT(ValueOf(*m), TensorNear(want_m, Tolerance<T>(), Tolerance<T>()));
  EXPECT_THAT(ValueOf(*v), TensorNear(want_v, Tolerance<T>(), Tolerance<T>()));
  EXPECT_THAT(ValueOf(*var), TensorNear(want_var, Tolerance<T>(), Tolerance<T>()));
}

TEST(ApplyAdam, MatchesAReferenceLoop) {
  for (bool nesterov : {false, true}) {
    for (bool locking : {false, true}) {
      CheckAdam<float>(nesterov, locking);
      CheckAdam<double>(nesterov, locking);
    }
  }
}

TEST(ApplyMomentum, LockingTwiceTheSameMutexDoesNotDeadlock) {
  // The same variable as var and accum: one mutex for both inputs.
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({2}, {1, 2}));
  KernelTester t("ApplyMomentum");
  t.RefInput(var.get())
      .RefInput(var.get())
      .Input(Tensor::Scalar<float>(1))
      .Input(MakeTensor<float>({2}, {0, 0}))
      .Input(Tensor::Scalar<float>(0))
      .Attr("use_locking", true);
  ASSERT_OK(t.Run());
  // accum = 0 * accum + 0 = 0 (var and accum alias), then var -= 1 * 0.
  EXPECT_THAT(ValueOf(*var), TensorNear(MakeTensor<float>({2}, {0, 0}), 0, 0));
}

TEST(ApplyGradientDescent, UninitializedVariableIsFailedPreconditionNamingIt) {
  Var var(DT_FLOAT);
  KernelTester t("ApplyGradientDescent");
  t.RefInput(&var, "dense/kernel")
      .Input(Tensor::Scalar<float>(0.1f))
      .Input(MakeTensor<float>({2}, {1, 2}));
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("Attempting to use uninitialized value dense/kernel")));
}

TEST(ApplyMomentum, UninitializedSlotIsFailedPreconditionNamingIt) {
  for (bool locking : {false, true}) {
    std::shared_ptr<Var> var = VarHolding(MakeTensor<double>({2}, {1, 2}));
    Var accum(DT_DOUBLE);
    KernelTester t("ApplyMomentum");
    t.RefInput(var.get(), "w")
        .RefInput(&accum, "w/Momentum")
        .Input(Tensor::Scalar<double>(0.1))
        .Input(MakeTensor<double>({2}, {1, 2}))
        .Input(Tensor::Scalar<double>(0.9))
        .Attr("use_locking", locking);
    EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                  HasSubstr("uninitialized value w/Momentum")));
  }
}

TEST(ApplyAdam, UninitializedSecondMomentIsFailedPreconditionNamingIt) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({1}, {1}));
  std::shared_ptr<Var> m = VarHolding(MakeTensor<float>({1}, {0}));
  Var v(DT_FLOAT);
  KernelTester t("ApplyAdam");
  t.RefInput(var.get(), "w").RefInput(m.get(), "w/Adam").RefInput(&v, "w/Adam_1");
  for (int i = 0; i < 6; ++i) t.Input(Tensor::Scalar<float>(0.5f));
  t.Input(MakeTensor<float>({1}, {1}));
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("uninitialized value w/Adam_1")));
}

TEST(ApplyGradientDescent, GradientOfAnotherShapeIsInvalidArgument) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({2}, {1, 2}));
  KernelTester t("ApplyGradientDescent");
  t.RefInput(var.get(), "w")
      .Input(Tensor::Scalar<float>(0.1f))
      .Input(MakeTensor<float>({3}, {1, 2, 3}))
      .UnknownInputShapes();
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("w"), HasSubstr("[2]"), HasSubstr("[3]"))));
  EXPECT_THAT(ValueOf(*var), TensorNear(MakeTensor<float>({2}, {1, 2}), 0, 0));
}

TEST(ApplyMomentum, AccumulatorOfAnotherShapeIsInvalidArgument) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({2}, {1, 2}));
  std::shared_ptr<Var> accum = VarHolding(MakeTensor<float>({1}, {0}));
  KernelTester t("ApplyMomentum");
  t.RefInput(var.get())
      .RefInput(accum.get())
      .Input(Tensor::Scalar<float>(0.1f))
      .Input(MakeTensor<float>({2}, {1, 2}))
      .Input(Tensor::Scalar<float>(0.9f))
      .UnknownInputShapes();
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("accum")));
}

TEST(ApplyGradientDescent, NonScalarLearningRateIsInvalidArgument) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<float>({2}, {1, 2}));
  KernelTester t("ApplyGradientDescent");
  t.RefInput(var.get())
      .Input(MakeTensor<float>({2}, {0.1f, 0.1f}))
      .Input(MakeTensor<float>({2}, {1, 2}))
      .UnknownInputShapes();
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("alpha"), HasSubstr("scalar"))));
}

TEST(ApplyAdam, NonScalarHyperparameterIsInvalidArgumentNamingIt) {
  std::shared_ptr<Var> var = VarHolding(MakeTensor<double>({1}, {1}));
  std::shared_ptr<Var> m = VarHolding(MakeTensor<double>({1}, {0}));
  std::shared_ptr<Var> v = VarHolding(MakeTensor<double>({1}, {0}));
  KernelTester t("ApplyAdam");
  t.RefInput(var.get()).RefInput(m.get()).RefInput(v.get());
  for (int i = 0; i < 4; ++i) t.Input(Tensor::Scalar<double>(0.5));
  t.Input(MakeTensor<double>({1}, {0.999}));  // beta2
  t.Input(Tensor::Scalar<double>(1e-8));
  t.Input(MakeTensor<double>({1}, {1}));
  t.UnknownInputShapes();
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("beta2")));
}

}  // namespace
}  // namespace rill
