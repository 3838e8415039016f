#include "runtime/training/optimizer.h"

#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace rill {
namespace {

DataType DtypeOf(const Variable& variable) { return BaseType(variable.ref().type()); }

// A scalar of `dtype` (float or double) holding `value`.
Tensor FloatScalar(double value, DataType dtype) {
  return dtype == DT_DOUBLE ? Tensor::Scalar<double>(value)
                            : Tensor::Scalar<float>(static_cast<float>(value));
}

Output ScalarConst(const Scope& scope, double value, DataType dtype) {
  return ops::Const(scope, FloatScalar(value, dtype), dtype);
}

// `name` relative to the scope's prefix (as given to WithOpName).
std::string LocalName(const Scope& scope, const std::string& name) {
  const std::string& prefix = scope.name_prefix();
  return name.starts_with(prefix) ? name.substr(prefix.size()) : name;
}

// `base`, or base_1, base_2, ... when a node is already named so or under
// it, as TensorFlow's name scopes: the update ops are named below the
// result and the result itself is made last.
std::string UnusedBaseName(const Scope& scope, const std::string& base) {
  const auto used = [&](const std::string& local) {
    const std::string full = scope.name_prefix() + local;
    for (const Node* node : scope.graph()->nodes()) {
      if (node->name() == full || node->name().starts_with(full + "/")) return true;
    }
    return false;
  };
  std::string candidate = base;
  for (int i = 1; used(candidate); ++i) candidate = absl::StrFormat("%s_%d", base, i);
  return candidate;
}

absl::flat_hash_set<const Node*> DataAncestors(const Node* node) {
  absl::flat_hash_set<const Node*> seen = {node};
  std::vector<const Node*> stack = {node};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge* edge : n->in_edges()) {
      if (!edge->IsControl() && seen.insert(edge->src).second) stack.push_back(edge->src);
    }
  }
  return seen;
}

std::string VariableNames(const std::vector<GradientAndVariable>& gradients) {
  std::vector<std::string> names;
  for (const GradientAndVariable& g : gradients) names.push_back(g.variable.name());
  return absl::StrFormat("[%s]", absl::StrJoin(names, ", "));
}

bool HasAnyGradient(const std::vector<GradientAndVariable>& gradients) {
  for (const GradientAndVariable& g : gradients) {
    if (g.gradient.ok()) return true;
  }
  return false;
}

// The status of building `op` in `scope`: its error, or INTERNAL if the op
// is null without one.
absl::StatusOr<Operation> Built(const Scope& scope, const Operation& op) {
  RETURN_IF_ERROR(scope.status());
  if (!op.ok()) return absl::InternalError("an optimizer op was not built");
  return op;
}

absl::Status CheckUpdatable(const GradientAndVariable& g) {
  if (!g.variable.ok()) return absl::InvalidArgumentError("a null variable was given a gradient");
  const DataType dtype = DtypeOf(g.variable);
  if (dtype != DT_FLOAT && dtype != DT_DOUBLE) {
    return absl::InvalidArgumentError(
        absl::StrFormat("variable '%s' is %s; optimizers update float and double variables",
                        g.variable.name(), DataTypeString(dtype)));
  }
  if (BaseType(g.gradient.type()) != dtype) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the gradient '%s' of variable '%s' is %s, the variable %s", g.gradient.name(),
        g.variable.name(), DataTypeString(BaseType(g.gradient.type())), DataTypeString(dtype)));
  }
  return absl::OkStatus();
}

// A tensor of 1 with the global step's integer dtype.
absl::StatusOr<Tensor> One(const Variable& global_step) {
  switch (DtypeOf(global_step)) {
    case DT_INT64:
      return Tensor::Scalar<int64_t>(1);
    case DT_INT32:
      return Tensor::Scalar<int32_t>(1);
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("the global step '%s' is %s; it must be int32 or int64",
                          global_step.name(), DataTypeString(DtypeOf(global_step))));
  }
}

}  // namespace

Scope Optimizer::UpdateScope::Named(std::string_view local) const {
  return scope.WithOpName(prefix + std::string(local));
}

absl::StatusOr<std::vector<GradientAndVariable>> Optimizer::ComputeGradients(
    const Scope& scope, const Output& loss, const std::vector<Variable>& variables) {
  RETURN_IF_ERROR(scope.status());
  if (variables.empty()) return absl::InvalidArgumentError("No variables to optimize");
  if (!loss.ok()) return absl::InvalidArgumentError("the loss is a null output");
  std::vector<Output> xs;
  for (const Variable& v : variables) {
    if (!v.ok()) return absl::InvalidArgumentError("a variable to optimize is null");
    xs.push_back(v.value());
  }
  ASSIGN_OR_RETURN(std::vector<Output> grads, AddGradients(scope, {loss}, xs));
  // AddGradients gives zeros for an x the loss does not depend on; as
  // tf.train, such a variable gets no gradient.
  const absl::flat_hash_set<const Node*> ancestors = DataAncestors(loss.node());
  std::vector<GradientAndVariable> result;
  for (size_t i = 0; i < variables.size(); ++i) {
    const bool connected = ancestors.contains(variables[i].value().node());
    result.push_back({connected ? grads[i] : Output(), variables[i]});
  }
  return result;
}

absl::StatusOr<Operation> Optimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradientAndVariable>& gradients,
    const Variable* global_step, std::string_view name) {
  RETURN_IF_ERROR(scope.status());
  std::vector<const GradientAndVariable*> present;
  std::vector<Variable> variables;
  for (const GradientAndVariable& g : gradients) {
    if (!g.gradient.ok()) continue;
    RETURN_IF_ERROR(CheckUpdatable(g));
    present.push_back(&g);
    variables.push_back(g.variable);
  }
  if (present.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("No gradients provided for any variable: %s", VariableNames(gradients)));
  }
  if (global_step != nullptr && !global_step->ok()) {
    return absl::InvalidArgumentError("the global step is a null variable");
  }
  const std::string base = UnusedBaseName(scope, name.empty() ? name_ : std::string(name));

  RETURN_IF_ERROR(Prepare(scope, variables));
  std::vector<Operation> updates;
  for (const GradientAndVariable* g : present) {
    // Beside the variable, with its constants, as TensorFlow colocates
    // updates: a step that updates on a ps then needs nothing from the
    // worker that built it but the gradient.
    const UpdateScope update{scope.ColocateOnlyWith(g->variable.ref().op()),
                             absl::StrFormat("%s/update_%s/", base, g->variable.name())};
    ASSIGN_OR_RETURN(Operation op, ApplyDense(update, g->gradient, g->variable));
    updates.push_back(op);
  }
  ASSIGN_OR_RETURN(std::vector<Operation> done, Finish(scope, base + "/", std::move(updates)));

  if (global_step == nullptr) {
    const ops::NoOp group(scope.WithOpName(base).WithControlDependencies(done));
    return Built(scope, group.operation);
  }
  const ops::NoOp group(scope.WithOpName(base + "/update").WithControlDependencies(done));
  ASSIGN_OR_RETURN(Tensor one, One(*global_step));
  const Scope step_scope =
      scope.ColocateWith(global_step->ref().op()).WithControlDependencies({group.operation});
  const ops::Const value(step_scope.WithOpName(base + "/value"), one, one.dtype());
  const ops::AssignAdd increment(step_scope.WithOpName(base), global_step->ref(), value);
  return Built(scope, increment.operation);
}

absl::StatusOr<Operation> Optimizer::Minimize(const Scope& scope, const Output& loss,
                                              const std::vector<Variable>& variables,
                                              const Variable* global_step, std::string_view name) {
  ASSIGN_OR_RETURN(std::vector<GradientAndVariable> gradients,
                   ComputeGradients(scope, loss, variables));
  if (!HasAnyGradient(gradients)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "No gradients provided for any variable, check your graph for ops that do not support "
        "gradients, between variables %s and loss %s",
        VariableNames(gradients), loss.name()));
  }
  return ApplyGradients(scope, gradients, global_step, name);
}

absl::StatusOr<Variable> Optimizer::ZerosSlot(const Scope& scope, const Variable& variable,
                                              const std::string& slot_name) {
  const auto key = std::make_pair(variable.name(), slot_name);
  if (auto it = slots_.find(key); it != slots_.end() && it->second.IsIn(*scope.graph())) {
    return it->second.variable;
  }
  ASSIGN_OR_RETURN(const TensorShape shape, variable.ref().shape().AsTensorShape());
  // A part's slot is the same part of the slot of the whole, which a
  // checkpoint keeps whole ("w/Adam"), as TensorFlow's slot_creator does.
  std::optional<SaveSliceInfo> slice = variable.save_slice_info();
  if (slice.has_value()) slice->full_name += "/" + slot_name;
  const Variable slot(scope.ColocateOnlyWith(variable.ref().op()),
                      LocalName(scope, variable.name()) + "/" + slot_name,
                      Tensor(DtypeOf(variable), shape), std::move(slice));
  RETURN_IF_ERROR(scope.status());
  slots_.insert_or_assign(key, MadeVariable{slot.name(), slot});
  return slot;
}

GradientDescentOptimizer::GradientDescentOptimizer(double learning_rate, bool use_locking)
    : Optimizer("GradientDescent"), learning_rate_(learning_rate), use_locking_(use_locking) {}

absl::StatusOr<Operation> GradientDescentOptimizer::ApplyDense(const UpdateScope& update,
                                                               const Output& gradient,
                                                               const Variable& variable) {
  const DataType dtype = DtypeOf(variable);
  const Output lr = ScalarConst(update.Named("learning_rate"), learning_rate_, dtype);
  const ops::ApplyGradientDescent apply(update.Named("ApplyGradientDescent"), variable.ref(), lr,
                                        gradient,
                                        ops::ApplyGradientDescent::UseLocking(use_locking_));
  return Built(update.scope, apply.operation);
}

MomentumOptimizer::MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov,
                                     bool use_locking)
    : Optimizer("Momentum"),
      learning_rate_(learning_rate),
      momentum_(momentum),
      use_nesterov_(use_nesterov),
      use_locking_(use_locking) {}

absl::StatusOr<Operation> MomentumOptimizer::ApplyDense(const UpdateScope& update,
                                                        const Output& gradient,
                                                        const Variable& variable) {
  ASSIGN_OR_RETURN(const Variable accum, ZerosSlot(update.scope, variable, name()));
  const DataType dtype = DtypeOf(variable);
  const Output lr = ScalarConst(update.Named("learning_rate"), learning_rate_, dtype);
  const Output momentum = ScalarConst(update.Named("momentum"), momentum_, dtype);
  const ops::ApplyMomentum apply(
      update.Named("ApplyMomentum"), variable.ref(), accum.ref(), lr, gradient, momentum,
      ops::ApplyMomentum::UseLocking(use_locking_).UseNesterov(use_nesterov_));
  return Built(update.scope, apply.operation);
}

AdamOptimizer::AdamOptimizer(double learning_rate, double beta1, double beta2, double epsilon,
                             bool use_locking)
    : Optimizer("Adam"),
      learning_rate_(learning_rate),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon),
      use_locking_(use_locking) {}

absl::Status AdamOptimizer::Prepare(const Scope& scope, const std::vector<Variable>& variables) {
  if (beta1_power_.has_value() && beta1_power_->IsIn(*scope.graph())) return scope.status();
  // As TensorFlow, the powers live beside the first variable, in its dtype.
  const Variable& first = variables.front();
  const Scope beside = scope.ColocateOnlyWith(first.ref().op());
  const Variable beta1_power(beside, "beta1_power", FloatScalar(beta1_, DtypeOf(first)));
  const Variable beta2_power(beside, "beta2_power", FloatScalar(beta2_, DtypeOf(first)));
  RETURN_IF_ERROR(scope.status());
  beta1_power_ = MadeVariable{beta1_power.name(), beta1_power};
  beta2_power_ = MadeVariable{beta2_power.name(), beta2_power};
  return absl::OkStatus();
}

absl::StatusOr<Operation> AdamOptimizer::ApplyDense(const UpdateScope& update,
                                                    const Output& gradient,
                                                    const Variable& variable) {
  ASSIGN_OR_RETURN(const Variable m, ZerosSlot(update.scope, variable, name()));
  ASSIGN_OR_RETURN(const Variable v, ZerosSlot(update.scope, variable, name() + "_1"));
  const DataType dtype = DtypeOf(variable);
  Output beta1_power = beta1_power_->variable.value();
  Output beta2_power = beta2_power_->variable.value();
  if (BaseType(beta1_power.type()) != dtype) {
    beta1_power = ops::Cast(update.Named("Cast"), beta1_power, dtype);
    beta2_power = ops::Cast(update.Named("Cast_1"), beta2_power, dtype);
  }
  const ops::ApplyAdam apply(update.Named("ApplyAdam"), variable.ref(), m.ref(), v.ref(),
                             beta1_power, beta2_power,
                             ScalarConst(update.Named("learning_rate"), learning_rate_, dtype),
                             ScalarConst(update.Named("beta1"), beta1_, dtype),
                             ScalarConst(update.Named("beta2"), beta2_, dtype),
                             ScalarConst(update.Named("epsilon"), epsilon_, dtype), gradient,
                             ops::ApplyAdam::UseLocking(use_locking_));
  return Built(update.scope, apply.operation);
}

absl::StatusOr<std::vector<Operation>> AdamOptimizer::Finish(const Scope& scope,
                                                             const std::string& prefix,
                                                             std::vector<Operation> updates) {
  const Variable& beta1_power = beta1_power_->variable;
  const Variable& beta2_power = beta2_power_->variable;
  const DataType dtype = DtypeOf(beta1_power);
  // After every update has read the powers of this step.
  const Scope after =
      scope.ColocateOnlyWith(beta1_power.ref().op()).WithControlDependencies(updates);
  const ops::Mul next1(after.WithOpName(prefix + "mul"), beta1_power.value(),
                       ScalarConst(after.WithOpName(prefix + "beta1"), beta1_, dtype));
  const ops::Assign assign1(after.WithOpName(prefix + "Assign"), beta1_power.ref(), next1,
                            ops::Assign::UseLocking(use_locking_));
  const ops::Mul next2(after.WithOpName(prefix + "mul_1"), beta2_power.value(),
                       ScalarConst(after.WithOpName(prefix + "beta2"), beta2_, dtype));
  const ops::Assign assign2(after.WithOpName(prefix + "Assign_1"), beta2_power.ref(), next2,
                            ops::Assign::UseLocking(use_locking_));
  RETURN_IF_ERROR(scope.status());
  updates.push_back(assign1.operation);
  updates.push_back(assign2.operation);
  return updates;
}

}  // namespace rill
