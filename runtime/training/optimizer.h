// Optimizers in the style of tf.train: Minimize differentiates a loss and
// emits one Apply* op per variable, placed where the variable lives.
#ifndef RILL_RUNTIME_TRAINING_OPTIMIZER_H_
#define RILL_RUNTIME_TRAINING_OPTIMIZER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/scope.h"
#include "ops/variable.h"

namespace rill {

struct GradientAndVariable {
  Output gradient;  // Null when the loss does not depend on the variable.
  Variable variable;
};

class Optimizer {
 public:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}
  virtual ~Optimizer() = default;

  // d(loss)/d(v) for each of `variables` (through their reads), as
  // tf.train.Optimizer.compute_gradients.
  absl::StatusOr<std::vector<GradientAndVariable>> ComputeGradients(
      const Scope& scope, const Output& loss, const std::vector<Variable>& variables);

  // One Apply* op per variable with a gradient, on the variable's device;
  // then, when `global_step` is not null, increments it by one after all
  // of them. Returns the op that groups the updates (named `name`).
  absl::StatusOr<Operation> ApplyGradients(const Scope& scope,
                                           const std::vector<GradientAndVariable>& gradients,
                                           const Output& global_step = Output(),
                                           std::string_view name = "");

  // ComputeGradients then ApplyGradients. INVALID_ARGUMENT when no
  // variable has a gradient.
  absl::StatusOr<Operation> Minimize(const Scope& scope, const Output& loss,
                                     const std::vector<Variable>& variables,
                                     const Output& global_step = Output(),
                                     std::string_view name = "");

  const std::string& name() const { return name_; }

 protected:
  // The update of one variable. `scope` is on the variable's device, named
  // under "<name>/update_<var>"; slot variables (accumulators) are created
  // here, registered as initializers of the root scope.
  virtual absl::StatusOr<Output> ApplyDense(const Scope& scope, const Output& gradient,
                                            const Variable& variable) = 0;
  // Runs once per ApplyGradients before the updates (hyperparameter
  // constants, Adam's beta powers) and after them, given the update ops
  // (Adam advances its beta powers); returns the ops the group waits on.
  virtual absl::Status Prepare(const Scope& scope) { return scope.status(); }
  virtual absl::StatusOr<std::vector<Operation>> Finish(const Scope& scope,
                                                        std::vector<Operation> updates) {
    return updates;
  }

 private:
  std::string name_;
};

class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate);
  // ...
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov = false);
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(double learning_rate = 0.001, double beta1 = 0.9, double beta2 = 0.999,
                         double epsilon = 1e-8);
};

// An int64 scalar variable "global_step" starting at 0 (tf.train's
// get_or_create_global_step), registered with the scope's initializers.
Variable CreateGlobalStep(const Scope& scope);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_OPTIMIZER_H_
