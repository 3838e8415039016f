#include "graph/function_inline.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/attr_value_util.h"
#include "graph/function_library.h"
#include "graph/lower_functional_ops.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

bool IsCallOp(std::string_view op) {
  return op == "PartitionedCall" || op == "StatefulPartitionedCall";
}

std::string TypesString(const DataTypeVector& types) {
  std::vector<std::string> names;
  for (DataType type : types) names.push_back(DataTypeString(type));
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

// Calls nest this deep at most: deeper is a runaway (recursion is caught
// by name before that).
constexpr size_t kMaxCallDepth = 1000;

class Inliner {
 public:
  Inliner(const FunctionLibrary& library, GraphDef* out) : library_(library), out_(out) {}

  // Adds `node` to the output, or its function's body when it is a call.
  absl::Status Emit(NodeDef node) {
    std::string function;
    AttrMap attrs;
    // Kept earlier (its function uses an op rill lacks): it stays as it is,
    // in graphs derived from this one too, which may not carry the library.
    if (node.attr().contains(kUninlinedCallAttr)) {
      *out_->add_node() = std::move(node);
      return absl::OkStatus();
    }
    if (IsFunctionalControlFlow(node.op())) {
      std::vector<NodeDef> lowered;
      RETURN_IF_ERROR(LowerFunctionalControlFlow(node, &lowered));
      for (NodeDef& part : lowered) RETURN_IF_ERROR(Emit(std::move(part)));
      return absl::OkStatus();
    }
    if (IsCallOp(node.op())) {
      auto f = node.attr().find("f");
      if (f == node.attr().end() || !f->second.has_func()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "node '%s' (%s) names no function in attr 'f'", node.name(), node.op()));
      }
      function = f->second.func().name();
      attrs = f->second.func().attr();
    } else if (library_.Find(node.op()) != nullptr) {
      function = node.op();
      for (const auto& [name, value] : node.attr()) {
        if (!absl::StartsWith(name, "_")) attrs[name] = value;
      }
    } else {
      *out_->add_node() = std::move(node);
      return absl::OkStatus();
    }
    return Expand(node, function, attrs);
  }

  // Every reader of a call's result that results_ holds reads the result
  // itself (through nested calls too).
  void ForwardResults() {
    if (results_.empty()) return;
    for (NodeDef& node : *out_->mutable_node()) {
      for (std::string& input : *node.mutable_input()) {
        for (auto it = results_.find(input); it != results_.end(); it = results_.find(input)) {
          input = it->second;
        }
      }
    }
  }

 private:
  absl::Status CallError(const NodeDef& call, const std::string& function,
                         std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("node '%s' calls function '%s': %s", call.name(), function, what));
  }

  absl::Status CheckTypes(const NodeDef& call, const std::string& function, const char* attr,
                          const DataTypeVector& want) const {
    if (!call.attr().contains(attr)) return absl::OkStatus();
    ASSIGN_OR_RETURN(DataTypeVector types, GetTypeListAttr(call, attr));
    if (types != want) {
      return CallError(call, function,
                       absl::StrFormat("its %s is %s but the function's is %s", attr,
                                       TypesString(types), TypesString(want)));
    }
    return absl::OkStatus();
  }

  absl::Status Expand(const NodeDef& call, const std::string& function, const AttrMap& attrs) {
    if (std::find(stack_.begin(), stack_.end(), function) != stack_.end()) {
      stack_.push_back(function);
      return CallError(call, function,
                       absl::StrFormat("it calls itself: %s", absl::StrJoin(stack_, " -> ")));
    }
    if (stack_.size() >= kMaxCallDepth) {
      return CallError(call, function,
                       absl::StrFormat("calls nest more than %d deep", kMaxCallDepth));
    }
    absl::StatusOr<FunctionBody> body = library_.Instantiate(function, attrs);
    if (!body.ok()) {
      const std::string reason =
          absl::StrFormat("node '%s': %s", call.name(), body.status().message());
      // The function exists, so what was not found is an op it uses.
      if (absl::IsNotFound(body.status()) && library_.Find(function) != nullptr) {
        return KeepCall(call, function, attrs, reason);
      }
      return absl::Status(body.status().code(), reason);
    }
    std::vector<std::string> data_inputs, control_inputs;
    for (const std::string& input : call.input()) {
      (absl::StartsWith(input, "^") ? control_inputs : data_inputs).push_back(input);
    }
    if (data_inputs.size() != body->arg_types.size()) {
      return CallError(call, function,
                       absl::StrFormat("it passes %d arguments; the function takes %d",
                                       data_inputs.size(), body->arg_types.size()));
    }
    if (IsCallOp(call.op())) {
      RETURN_IF_ERROR(CheckTypes(call, function, "Tin", body->arg_types));
      RETURN_IF_ERROR(CheckTypes(call, function, "Tout", body->ret_types));
    }

    const std::string prefix = call.name() + "/";
    const std::string& device = call.device();
    std::string input_control;
    if (!control_inputs.empty()) {
      input_control = prefix + "input_control_node";
      NodeDef* noop = out_->add_node();
      noop->set_name(input_control);
      noop->set_op("NoOp");
      noop->set_device(device);
      for (const std::string& input : control_inputs) noop->add_input(input);
    }
    // Without control inputs to hold them back, the body reads the call's
    // inputs directly: a graph of many small calls costs what it would
    // written inline. Otherwise an Identity per argument waits for them.
    absl::flat_hash_map<std::string, std::string> args;
    for (size_t i = 0; i < body->arg_nodes.size(); ++i) {
      if (input_control.empty()) {
        args[body->arg_nodes[i]] = data_inputs[i];
        continue;
      }
      NodeDef* arg = out_->add_node();
      arg->set_name(prefix + body->arg_nodes[i]);
      arg->set_op("Identity");
      arg->set_device(device);
      arg->add_input(data_inputs[i]);
      arg->add_input("^" + input_control);
      (*arg->mutable_attr())["T"] = MakeAttr(body->arg_types[i]);
    }
    const auto rename = [&](const std::string& input) {
      const bool control = absl::StartsWith(input, "^");
      const std::string name = control ? input.substr(1) : input;
      auto it = args.find(name);
      if (it == args.end()) return absl::StrCat(control ? "^" : "", prefix, name);
      if (!control) return it->second;
      return absl::StrCat("^", it->second.substr(0, it->second.find(':')));
    };
    absl::flat_hash_set<std::string> body_names;
    for (const NodeDef& node : body->nodes) body_names.insert(node.name());
    stack_.push_back(function);
    for (NodeDef& node : body->nodes) {
      const bool had_inputs = node.input_size() > 0;
      node.set_name(prefix + node.name());
      for (std::string& input : *node.mutable_input()) input = rename(input);
      if (!had_inputs && !input_control.empty()) node.add_input("^" + input_control);
      if (node.device().empty()) node.set_device(device);
      RenameColocations(prefix, body_names, &node);
      RETURN_IF_ERROR(Emit(std::move(node)));
    }
    stack_.pop_back();

    NodeDef* result = out_->add_node();
    result->set_name(call.name());
    result->set_device(device);
    if (body->rets.empty()) {
      result->set_op("NoOp");
    } else {
      result->set_op("IdentityN");
      (*result->mutable_attr())["T"] = MakeAttr(body->ret_types);
      for (const std::string& ret : body->rets) result->add_input(rename(ret));
    }
    for (const std::string& node : body->control_rets) result->add_input("^" + prefix + node);
    for (const auto& [name, value] : call.attr()) {
      if (absl::StartsWith(name, "_")) (*result->mutable_attr())[name] = value;
    }
    // A call inside a function's body, which nobody outside can feed,
    // passes its results on directly when the call waits for nothing else:
    // nested calls cost what the same graph written inline does.
    if (!stack_.empty() && body->control_rets.empty()) {
      for (size_t k = 0; k < body->rets.size(); ++k) {
        const std::string ret = rename(body->rets[k]);
        results_[absl::StrCat(call.name(), ":", k)] = ret;
        if (k == 0) results_[call.name()] = ret;
      }
    }
    return absl::OkStatus();
  }

  // The call as a StatefulPartitionedCall that says why it was not inlined.
  absl::Status KeepCall(const NodeDef& call, const std::string& function, const AttrMap& attrs,
                        const std::string& reason) {
    ASSIGN_OR_RETURN(auto types, library_.CallTypes(function, attrs));
    NodeDef* kept = out_->add_node();
    kept->set_name(call.name());
    kept->set_op("StatefulPartitionedCall");
    kept->set_device(call.device());
    *kept->mutable_input() = call.input();
    for (const auto& [name, value] : call.attr()) {
      if (absl::StartsWith(name, "_")) (*kept->mutable_attr())[name] = value;
    }
    NameAttrList f;
    f.set_name(function);
    *f.mutable_attr() = attrs;
    (*kept->mutable_attr())["f"] = MakeAttr(f);
    (*kept->mutable_attr())["Tin"] = MakeAttr(types.first);
    (*kept->mutable_attr())["Tout"] = MakeAttr(types.second);
    (*kept->mutable_attr())[kUninlinedCallAttr] = MakeAttr(reason);
    return absl::OkStatus();
  }

  // A body node colocated with another body node ("loc:@x") follows its
  // renaming.
  static void RenameColocations(const std::string& prefix,
                                const absl::flat_hash_set<std::string>& body_names, NodeDef* node) {
    auto it = node->mutable_attr()->find("_class");
    if (it == node->mutable_attr()->end() || !it->second.has_list()) return;
    for (std::string& entry : *it->second.mutable_list()->mutable_s()) {
      const std::string kLoc = "loc:@";
      if (absl::StartsWith(entry, kLoc) && body_names.contains(entry.substr(kLoc.size()))) {
        entry = absl::StrCat(kLoc, prefix, entry.substr(kLoc.size()));
      }
    }
  }

  const FunctionLibrary& library_;
  GraphDef* out_;
  std::vector<std::string> stack_;  // The functions being expanded, outermost first.
  // A result of a call inside a body ("outer/inner:1") -> what it returns.
  absl::flat_hash_map<std::string, std::string> results_;
};

}  // namespace

bool CallsFunctions(const GraphDef& graph) {
  absl::flat_hash_set<std::string> functions;
  for (const FunctionDef& fdef : graph.library().function()) {
    functions.insert(fdef.signature().name());
  }
  return std::any_of(graph.node().begin(), graph.node().end(), [&](const NodeDef& node) {
    return IsCallOp(node.op()) || IsFunctionalControlFlow(node.op()) ||
           functions.contains(node.op());
  });
}

absl::StatusOr<GraphDef> InlineFunctionCalls(const GraphDef& graph, const OpRegistry& registry) {
  ASSIGN_OR_RETURN(FunctionLibrary library, FunctionLibrary::Create(graph.library(), registry));
  GraphDef out;
  *out.mutable_versions() = graph.versions();
  *out.mutable_library() = graph.library();
  Inliner inliner(library, &out);
  for (const NodeDef& node : graph.node()) RETURN_IF_ERROR(inliner.Emit(node));
  inliner.ForwardResults();
  return out;
}

}  // namespace rill
