#include "graph/node_builder.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"

namespace rill {
namespace {

std::string InputName(const Output& output) {
  return TensorId{output.node()->name(), output.index()}.ToString();
}

bool IsListArg(const OpDef::ArgDef& arg) {
  return !arg.number_attr().empty() || !arg.type_list_attr().empty();
}

bool IsNull(const Operation& op) { return !op.ok(); }

// Sets the attrs that the inputs determine and the caller left unset.
// Inferred values that disagree are left for Graph::AddNode to report as an
// input type mismatch, with the slot and both types.
absl::Status InferTypeAttrs(const OpDef& op_def, const std::vector<std::vector<Output>>& args,
                            const std::vector<bool>& arg_is_list, NodeDef* def) {
  auto& attrs = *def->mutable_attr();
  for (size_t i = 0; i < args.size(); ++i) {
    const OpDef::ArgDef& arg = op_def.input_arg(static_cast<int>(i));
    if (IsListArg(arg) != arg_is_list[i]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input '%s' %s", arg.name(),
          IsListArg(arg) ? "takes a list of tensors" : "takes one tensor, not a list"));
    }
    const std::vector<Output>& values = args[i];
    if (!arg.number_attr().empty() && !attrs.contains(arg.number_attr())) {
      attrs[arg.number_attr()] = MakeAttr(static_cast<int64_t>(values.size()));
    }
    if (!arg.type_attr().empty() && !values.empty() && !attrs.contains(arg.type_attr())) {
      attrs[arg.type_attr()] = MakeAttr(BaseType(values.front().type()));
    }
    if (!arg.type_list_attr().empty() && !attrs.contains(arg.type_list_attr())) {
      DataTypeVector types;
      for (const Output& value : values) types.push_back(BaseType(value.type()));
      attrs[arg.type_list_attr()] = MakeAttr(types);
    }
  }
  return absl::OkStatus();
}

// "input N" or "a control input" for the first null input.
std::string DescribeNullInput(const std::vector<std::vector<Output>>& args,
                              const std::vector<Operation>& scope_deps,
                              const std::vector<Operation>& control_inputs) {
  int slot = 0;
  for (const std::vector<Output>& arg : args) {
    for (const Output& input : arg) {
      if (!input.ok()) return absl::StrFormat("input %d", slot);
      ++slot;
    }
  }
  if (std::ranges::any_of(scope_deps, IsNull) || std::ranges::any_of(control_inputs, IsNull)) {
    return "a control input";
  }
  return "an input";
}

}  // namespace

NodeBuilder::NodeBuilder(const Scope& scope, std::string_view op) : scope_(scope) {
  def_.set_op(std::string(op));
}

NodeBuilder& NodeBuilder::Input(const Output& input) {
  args_.push_back({input});
  arg_is_list_.push_back(false);
  null_input_ = null_input_ || !input.ok();
  return *this;
}

NodeBuilder& NodeBuilder::Input(absl::Span<const Output> inputs) {
  args_.emplace_back(inputs.begin(), inputs.end());
  arg_is_list_.push_back(true);
  for (const Output& input : inputs) null_input_ = null_input_ || !input.ok();
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(const Operation& op) {
  control_inputs_.push_back(op);
  null_input_ = null_input_ || !op.ok();
  return *this;
}

NodeBuilder& NodeBuilder::Attr(std::string_view name, AttrValue value) {
  (*def_.mutable_attr())[std::string(name)] = std::move(value);
  return *this;
}

Operation NodeBuilder::Finalize() {
  if (!scope_.ok()) return Operation();
  if (null_input_ || std::ranges::any_of(scope_.control_deps(), IsNull)) {
    scope_.UpdateStatus(absl::InvalidArgumentError(absl::StrFormat(
        "%s of '%s' is null (an earlier op failed)",
        DescribeNullInput(args_, scope_.control_deps(), control_inputs_), def_.op())));
    return Operation();
  }

  def_.set_name(scope_.GetUniqueNameForOp(def_.op()));
  def_.set_device(scope_.op_device());
  if (!scope_.colocation_groups().empty()) {
    AttrValue colocation;
    for (const std::string& group : scope_.colocation_groups())
      colocation.mutable_list()->add_s(group);
    (*def_.mutable_attr())["_class"] = std::move(colocation);
  }
  const auto fail = [&](const absl::Status& status) {
    scope_.UpdateStatus(absl::Status(
        status.code(),
        absl::StrFormat("node '%s' (%s): %s", def_.name(), def_.op(), status.message())));
    return Operation();
  };

  // Inside a loop or a cond, inputs from outside it come in through the
  // builder's Enter or Switch (which may add nodes, before this one).
  for (std::vector<Output>& arg : args_) {
    for (Output& input : arg) input = scope_.MapInput(input);
  }
  if (!scope_.ok()) return Operation();

  absl::StatusOr<const OpRegistration*> op = scope_.registry().LookUp(def_.op());
  if (!op.ok()) return fail(op.status());
  const OpDef& op_def = (*op)->op_def;
  if (static_cast<int>(args_.size()) != op_def.input_arg_size()) {
    return fail(absl::InvalidArgumentError(
        absl::StrFormat("expects %d inputs, got %d", op_def.input_arg_size(), args_.size())));
  }
  if (absl::Status status = InferTypeAttrs(op_def, args_, arg_is_list_, &def_); !status.ok()) {
    return fail(status);
  }

  // Inputs are named in the NodeDef, so a node of another graph with a
  // name taken here would silently connect to the wrong node.
  const auto foreign = [&](Node* node) { return scope_.graph()->FindNode(node->name()) != node; };
  for (const std::vector<Output>& arg : args_) {
    for (const Output& input : arg) {
      if (foreign(input.node())) {
        return fail(absl::InvalidArgumentError(
            absl::StrFormat("input '%s' belongs to another graph", input.name())));
      }
      def_.add_input(InputName(input));
    }
  }
  absl::flat_hash_set<std::string> seen;
  std::vector<Operation> deps = scope_.control_deps();
  // A scope's control dependency on an op outside the loop or cond being
  // built waits for the op's value as the builder brings it in (a loop's
  // constant Enter), as TensorFlow's WhileContext does: an edge straight
  // from outside would cross frames. An op without outputs stays as it is.
  for (Operation& dep : deps) {
    if (dep.node() == nullptr || dep.node()->num_outputs() == 0) continue;
    const Output mapped = scope_.MapInput(Output(dep, 0));
    if (mapped.ok() && mapped.node() != dep.node()) dep = mapped.op();
  }
  if (!scope_.ok()) return Operation();
  deps.insert(deps.end(), control_inputs_.begin(), control_inputs_.end());
  for (const Operation& dep : deps) {
    if (foreign(dep.node())) {
      return fail(absl::InvalidArgumentError(
          absl::StrFormat("control input '%s' belongs to another graph", dep.name())));
    }
    if (seen.insert(dep.name()).second) def_.add_input("^" + dep.name());
  }

  // AddNode's messages already name the node.
  absl::StatusOr<Node*> node = scope_.graph()->AddNode(std::move(def_));
  if (!node.ok()) {
    scope_.UpdateStatus(node.status());
    return Operation();
  }
  return Operation(*node);
}

}  // namespace rill
