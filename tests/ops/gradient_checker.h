// Numeric gradient checks: the full Jacobian that AddGradients builds,
// compared with central differences of the forward graph, both run through
// a Session.
#ifndef RILL_TESTS_OPS_GRADIENT_CHECKER_H_
#define RILL_TESTS_OPS_GRADIENT_CHECKER_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace rill::testing {

// Usage:
//   GradientChecker c;
//   Output x = c.RandomInput({2, 3});
//   EXPECT_THAT(c.MaxError({ops::Tanh(c.scope(), x)}), GradientErrorBelow(1e-8));
// Thread safety: none; one checker per test.
class GradientChecker {
 public:
  // Inputs are of `dtype` (DT_DOUBLE or DT_FLOAT); the finite-difference
  // step is 1e-6 for double and 1e-3 for float.
  explicit GradientChecker(DataType dtype = DT_DOUBLE, uint32_t seed = 1);

  const Scope& scope() const { return scope_; }

  // A Placeholder fed `value` (of the checker's dtype); the gradient is
  // checked with respect to it.
  Output Input(const Tensor& value);
  // Uniform in [lo, hi], avoiding (-min_abs, min_abs) so that kinks at
  // zero (Relu, Abs) stay out of the finite-difference window.
  Output RandomInput(const TensorShape& shape, double lo = -1, double hi = 1, double min_abs = 0);
  // A random tensor of the checker's dtype, drawn as RandomInput draws.
  Tensor RandomTensor(const TensorShape& shape, double lo = -1, double hi = 1, double min_abs = 0);

  // The largest |theoretical - numeric| entry of d(ys)/d(inputs) over
  // every input and every element of every y. Fails when building or
  // running fails, or when the Jacobian is zero everywhere (a check that
  // could not fail).
  absl::StatusOr<double> MaxError(const std::vector<Output>& ys);

 private:
  DataType dtype_;
  double delta_;
  std::mt19937 rng_;
  Scope scope_;
  std::vector<Output> inputs_;
  std::vector<Tensor> values_;
};

// EXPECT_THAT(checker.MaxError(ys), GradientErrorBelow(1e-7)): the check
// ran and its largest error is below the tolerance.
MATCHER_P(GradientErrorBelow, tolerance, "") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  *result_listener << "the largest error is " << *arg;
  return *arg < tolerance;
}

}  // namespace rill::testing

#endif  // RILL_TESTS_OPS_GRADIENT_CHECKER_H_
