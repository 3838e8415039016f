#include "graph/lower_functional_ops.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/attr_value_util.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"

namespace rill {
namespace {

// Builds the nodes that stand for one functional node, named under it.
class Lowering {
 public:
  Lowering(const NodeDef& node, std::vector<NodeDef>* out)
      : node_(node), prefix_(node.name() + "/"), out_(out) {
    for (const std::string& input : node.input()) {
      (absl::StartsWith(input, "^") ? controls_ : data_).push_back(input);
    }
  }

  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("node '%s' (%s): %s", node_.name(), node_.op(), what));
  }

  const std::vector<std::string>& data() const { return data_; }
  const std::vector<std::string>& controls() const { return controls_; }

  // "prefix/name" or, with an output, "prefix/name:k".
  std::string Name(const std::string& name, int output = 0) const {
    return output == 0 ? prefix_ + name : absl::StrCat(prefix_, name, ":", output);
  }

  NodeDef* Add(const std::string& name, std::string op, std::vector<std::string> inputs) {
    NodeDef& def = out_->emplace_back();
    def.set_name(Name(name));
    def.set_op(std::move(op));
    def.set_device(node_.device());
    for (std::string& input : inputs) def.add_input(std::move(input));
    return &def;
  }

  NodeDef* Add1(const std::string& name, std::string op, std::vector<std::string> inputs,
                DataType type) {
    NodeDef* def = Add(name, std::move(op), std::move(inputs));
    (*def->mutable_attr())["T"] = MakeAttr(type);
    return def;
  }

  // A call of `function` on `args` that waits for `control`.
  void Call(const std::string& name, const NameAttrList& function, std::vector<std::string> args,
            const std::string& control, const DataTypeVector& tin, const DataTypeVector& tout) {
    if (!control.empty()) args.push_back(absl::StrCat("^", control));
    const bool stateful = !absl::StartsWith(node_.op(), "Stateless");
    NodeDef* call =
        Add(name, stateful ? "StatefulPartitionedCall" : "PartitionedCall", std::move(args));
    (*call->mutable_attr())["Tin"] = MakeAttr(tin);
    (*call->mutable_attr())["Tout"] = MakeAttr(tout);
    (*call->mutable_attr())["f"] = MakeAttr(function);
  }

  // The node's replacement under its own name: its results, after `done`.
  void Finish(const std::vector<std::string>& results, const DataTypeVector& types,
              const std::string& done) {
    NodeDef& def = out_->emplace_back();
    def.set_name(node_.name());
    def.set_device(node_.device());
    def.set_op(results.empty() ? "NoOp" : "IdentityN");
    for (const std::string& result : results) def.add_input(result);
    if (!done.empty()) def.add_input(absl::StrCat("^", done));
    if (!results.empty()) (*def.mutable_attr())["T"] = MakeAttr(types);
    for (const auto& [name, value] : node_.attr()) {
      if (absl::StartsWith(name, "_")) (*def.mutable_attr())[name] = value;
    }
  }

  absl::StatusOr<NameAttrList> Function(const char* attr) const {
    auto it = node_.attr().find(attr);
    if (it == node_.attr().end() || !it->second.has_func()) {
      return Error(absl::StrFormat("attr '%s' names no function", attr));
    }
    return it->second.func();
  }

 private:
  const NodeDef& node_;
  const std::string prefix_;
  std::vector<NodeDef>* out_;
  std::vector<std::string> data_, controls_;
};

std::vector<std::string> WithControls(std::vector<std::string> inputs,
                                      const std::vector<std::string>& controls) {
  inputs.insert(inputs.end(), controls.begin(), controls.end());
  return inputs;
}

// Both branches are called on Switches of the inputs; a Merge per result
// takes the one that ran.
absl::Status LowerIf(Lowering& l, const NodeDef& node) {
  ASSIGN_OR_RETURN(DataType tcond, GetTypeAttr(node, "Tcond"));
  ASSIGN_OR_RETURN(DataTypeVector tin, GetTypeListAttr(node, "Tin"));
  ASSIGN_OR_RETURN(DataTypeVector tout, GetTypeListAttr(node, "Tout"));
  ASSIGN_OR_RETURN(NameAttrList then_branch, l.Function("then_branch"));
  ASSIGN_OR_RETURN(NameAttrList else_branch, l.Function("else_branch"));
  if (BaseType(tcond) != DT_BOOL) {
    return l.Error(absl::StrFormat("its predicate is %s; only a bool predicate is lowered",
                                   DataTypeString(tcond)));
  }
  if (l.data().size() != tin.size() + 1) {
    return l.Error(absl::StrFormat("%d inputs for Tin of %d", l.data().size(), tin.size()));
  }
  const std::string& pred = l.data()[0];
  l.Add1("switch_pred", "Switch", WithControls({pred, pred}, l.controls()), DT_BOOL);
  l.Add1("pivot_t", "Identity", {l.Name("switch_pred", 1)}, DT_BOOL);
  l.Add1("pivot_f", "Identity", {l.Name("switch_pred")}, DT_BOOL);
  std::vector<std::string> then_args, else_args;
  for (size_t i = 0; i < tin.size(); ++i) {
    const std::string name = absl::StrCat("input_", i);
    l.Add1(name, "Switch", WithControls({l.data()[i + 1], pred}, l.controls()), tin[i]);
    then_args.push_back(l.Name(name, 1));
    else_args.push_back(l.Name(name));
  }
  l.Call("then", then_branch, then_args, l.Name("pivot_t"), tin, tout);
  l.Call("else", else_branch, else_args, l.Name("pivot_f"), tin, tout);
  std::vector<std::string> results;
  for (size_t j = 0; j < tout.size(); ++j) {
    const std::string name = absl::StrCat("output_", j);
    NodeDef* merge = l.Add1(name, "Merge", {l.Name("then", j), l.Name("else", j)}, tout[j]);
    (*merge->mutable_attr())["N"] = MakeAttr(2);
    results.push_back(l.Name(name));
  }
  l.Add1("then_done", "Identity", {l.Name("pivot_t"), absl::StrCat("^", l.Name("then"))}, DT_BOOL);
  l.Add1("else_done", "Identity", {l.Name("pivot_f"), absl::StrCat("^", l.Name("else"))}, DT_BOOL);
  NodeDef* done =
      l.Add1("branch_executed", "Merge", {l.Name("then_done"), l.Name("else_done")}, DT_BOOL);
  (*done->mutable_attr())["N"] = MakeAttr(2);
  l.Finish(results, tout, l.Name("branch_executed"));
  return absl::OkStatus();
}

// Branch k runs when the index equals k, the last one otherwise (as
// TensorFlow's Case does for an index out of range): a chain of Switches
// on "index == k", each passing the inputs on to the next test.
absl::Status LowerCase(Lowering& l, const NodeDef& node) {
  ASSIGN_OR_RETURN(DataTypeVector tin, GetTypeListAttr(node, "Tin"));
  ASSIGN_OR_RETURN(DataTypeVector tout, GetTypeListAttr(node, "Tout"));
  auto it = node.attr().find("branches");
  if (it == node.attr().end() || it->second.list().func_size() == 0) {
    return l.Error("attr 'branches' names no function");
  }
  const auto& branches = it->second.list().func();
  const int n = branches.size();
  if (l.data().size() != tin.size() + 1) {
    return l.Error(absl::StrFormat("%d inputs for Tin of %d", l.data().size(), tin.size()));
  }
  std::vector<std::string> args(l.data().begin() + 1, l.data().end());
  std::string index = l.data()[0];
  std::vector<std::string> done;
  std::string pivot;  // Live when no earlier branch was taken.
  for (int k = 0; k + 1 < n; ++k) {
    const std::string is_k = absl::StrCat("is_", k), sp = absl::StrCat("switch_pred_", k);
    const std::string constant = absl::StrCat("branch_", k, "_index");
    NodeDef* c = l.Add(constant, "Const", {});
    (*c->mutable_attr())["dtype"] = MakeAttr(DT_INT32);
    (*c->mutable_attr())["value"] = MakeAttr(TensorToProto(Tensor::Scalar<int32_t>(k)));
    const std::vector<std::string> gate = k == 0 ? l.controls() : std::vector<std::string>{};
    l.Add1(is_k, "Equal", WithControls({index, l.Name(constant)}, gate), DT_INT32);
    l.Add1(sp, "Switch", {l.Name(is_k), l.Name(is_k)}, DT_BOOL);
    l.Add1(absl::StrCat("pivot_t_", k), "Identity", {l.Name(sp, 1)}, DT_BOOL);
    l.Add1(absl::StrCat("pivot_f_", k), "Identity", {l.Name(sp)}, DT_BOOL);
    std::vector<std::string> taken, passed;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string name = absl::StrCat("input_", k, "_", i);
      l.Add1(name, "Switch", WithControls({args[i], l.Name(is_k)}, gate), tin[i]);
      taken.push_back(l.Name(name, 1));
      passed.push_back(l.Name(name));
    }
    const std::string branch = absl::StrCat("branch_", k);
    l.Call(branch, branches[k], taken, l.Name(absl::StrCat("pivot_t_", k)), tin, tout);
    l.Add1(branch + "_done", "Identity",
           {l.Name(absl::StrCat("pivot_t_", k)), absl::StrCat("^", l.Name(branch))}, DT_BOOL);
    done.push_back(l.Name(branch + "_done"));
    const std::string next_index = absl::StrCat("index_", k);
    l.Add1(next_index, "Switch", {index, l.Name(is_k)}, DT_INT32);
    index = l.Name(next_index);
    args = passed;
    pivot = l.Name(absl::StrCat("pivot_f_", k));
  }
  const std::string last = absl::StrCat("branch_", n - 1);
  if (n == 1) args = WithControls(args, l.controls());
  l.Call(last, branches[n - 1], args, pivot, tin, tout);
  if (!pivot.empty()) {
    l.Add1(last + "_done", "Identity", {pivot, absl::StrCat("^", l.Name(last))}, DT_BOOL);
    done.push_back(l.Name(last + "_done"));
  }
  std::vector<std::string> results;
  for (size_t j = 0; j < tout.size(); ++j) {
    std::vector<std::string> inputs;
    for (int k = 0; k < n; ++k) inputs.push_back(l.Name(absl::StrCat("branch_", k), j));
    const std::string name = absl::StrCat("output_", j);
    NodeDef* merge = l.Add1(name, n > 1 ? "Merge" : "Identity", inputs, tout[j]);
    if (n > 1) (*merge->mutable_attr())["N"] = MakeAttr(n);
    results.push_back(l.Name(name));
  }
  std::string executed = l.Name(last);
  if (n > 1) {
    NodeDef* merge = l.Add1("branch_executed", "Merge", done, DT_BOOL);
    (*merge->mutable_attr())["N"] = MakeAttr(n);
    executed = l.Name("branch_executed");
  }
  l.Finish(results, tout, executed);
  return absl::OkStatus();
}

// A loop frame named after the node: Enter, Merge with the NextIteration,
// the cond's call, LoopCond and Switch, Exit, the body's call.
absl::Status LowerWhile(Lowering& l, const NodeDef& node) {
  ASSIGN_OR_RETURN(DataTypeVector types, GetTypeListAttr(node, "T"));
  ASSIGN_OR_RETURN(NameAttrList cond, l.Function("cond"));
  ASSIGN_OR_RETURN(NameAttrList body, l.Function("body"));
  absl::StatusOr<int64_t> parallel = GetIntAttr(node, "parallel_iterations");
  if (types.empty()) return l.Error("it has no loop variables");
  if (l.data().size() != types.size()) {
    return l.Error(absl::StrFormat("%d inputs for T of %d", l.data().size(), types.size()));
  }
  std::vector<std::string> merges, body_inputs, exits;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string enter = absl::StrCat("enter_", i), merge = absl::StrCat("merge_", i);
    NodeDef* def = l.Add1(enter, "Enter", WithControls({l.data()[i]}, l.controls()), types[i]);
    (*def->mutable_attr())["frame_name"] = MakeAttr(node.name());
    (*def->mutable_attr())["is_constant"] = MakeAttr(false);
    (*def->mutable_attr())["parallel_iterations"] =
        MakeAttr(parallel.ok() ? *parallel : int64_t{10});
    NodeDef* m = l.Add1(merge, "Merge", {l.Name(enter), l.Name(absl::StrCat("next_iteration_", i))},
                        types[i]);
    (*m->mutable_attr())["N"] = MakeAttr(2);
    merges.push_back(l.Name(merge));
  }
  l.Call("cond", cond, merges, merges[0], types, {DT_BOOL});
  l.Add("loop_cond", "LoopCond", {l.Name("cond")});
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string sw = absl::StrCat("switch_", i);
    l.Add1(sw, "Switch", {merges[i], l.Name("loop_cond")}, types[i]);
    l.Add1(absl::StrCat("exit_", i), "Exit", {l.Name(sw)}, types[i]);
    l.Add1(absl::StrCat("body_input_", i), "Identity", {l.Name(sw, 1)}, types[i]);
    body_inputs.push_back(l.Name(absl::StrCat("body_input_", i)));
    exits.push_back(l.Name(absl::StrCat("exit_", i)));
  }
  l.Call("body", body, body_inputs, body_inputs[0], types, types);
  for (size_t i = 0; i < types.size(); ++i) {
    l.Add1(absl::StrCat("next_iteration_", i), "NextIteration",
           {l.Name("body", static_cast<int>(i))}, types[i]);
  }
  l.Finish(exits, types, "");
  return absl::OkStatus();
}

}  // namespace

bool IsFunctionalControlFlow(std::string_view op) {
  return op == "If" || op == "StatelessIf" || op == "Case" || op == "StatelessCase" ||
         op == "While" || op == "StatelessWhile";
}

absl::Status LowerFunctionalControlFlow(const NodeDef& node, std::vector<NodeDef>* out) {
  Lowering lowering(node, out);
  absl::Status status;
  if (absl::EndsWith(node.op(), "If")) {
    status = LowerIf(lowering, node);
  } else if (absl::EndsWith(node.op(), "Case")) {
    status = LowerCase(lowering, node);
  } else {
    status = LowerWhile(lowering, node);
  }
  if (status.ok() || absl::StartsWith(status.message(), "node '")) return status;
  return lowering.Error(std::string(status.message()));
}

}  // namespace rill
