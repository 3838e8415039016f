#include "graph/function_builder.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "graph/attr_value_util.h"
#include "graph/function_library.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

using Endpoint = std::pair<const Node*, int>;

// An argument name as TensorFlow's signatures spell them: [a-z][a-z0-9_]*.
std::string ArgName(const std::string& node_name) {
  std::string name;
  for (char c : node_name) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += (std::islower(static_cast<unsigned char>(lower)) ||
             std::isdigit(static_cast<unsigned char>(lower)))
                ? lower
                : '_';
  }
  if (name.empty() || !std::islower(static_cast<unsigned char>(name[0]))) name = "a_" + name;
  return name;
}

// Output `index` of `node` as a function body names it: "node:out_arg:k".
std::string BodyTensorName(const Node& node, int index) {
  const NodeSignature& signature = node.signature();
  for (size_t j = 0; j < signature.output_arg_ranges.size(); ++j) {
    const auto [begin, end] = signature.output_arg_ranges[j];
    if (index >= begin && index < end) {
      return absl::StrCat(node.name(), ":", node.op_def().output_arg(static_cast<int>(j)).name(),
                          ":", index - begin);
    }
  }
  return absl::StrCat(node.name(), ":", index);
}

class FunctionBuilder {
 public:
  FunctionBuilder(const std::string& name, const std::vector<Output>& inputs)
      : name_(name), inputs_(inputs) {}

  absl::StatusOr<FunctionDef> Build(const FunctionOutputs& outputs) {
    fdef_.mutable_signature()->set_name(name_);
    RETURN_IF_ERROR(AddArguments());
    std::vector<const Node*> roots;
    for (const Output& output : outputs.values) {
      if (!output.ok()) return Error("an output is null");
      roots.push_back(output.node());
    }
    for (const Operation& op : outputs.control) {
      if (!op.ok()) return Error("a control output is null");
      roots.push_back(op.node());
    }
    RETURN_IF_ERROR(AddBody(roots));
    RETURN_IF_ERROR(AddResults(outputs));
    return std::move(fdef_);
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat("function '%s': %s", name_, what));
  }

  absl::Status AddArguments() {
    absl::flat_hash_set<std::string> used;
    for (const Output& input : inputs_) {
      if (!input.ok()) return Error("an input is null");
      std::string name = ArgName(input.node()->name());
      if (input.index() > 0) absl::StrAppend(&name, "_", input.index());
      for (int n = 1; used.contains(name); ++n)
        name = absl::StrCat(ArgName(input.node()->name()), "_", n);
      used.insert(name);
      OpDef::ArgDef* arg = fdef_.mutable_signature()->add_input_arg();
      arg->set_name(name);
      arg->set_type(BaseType(input.type()));
      args_.emplace(Endpoint(input.node(), input.index()), name);
      input_nodes_.insert(input.node());
    }
    return absl::OkStatus();
  }

  // The name of what `src`:`index` is in the body: an argument or an
  // output of a body node.
  absl::StatusOr<std::string> Source(const Node& src, int index) const {
    if (auto it = args_.find(Endpoint(&src, index)); it != args_.end()) return it->second;
    if (input_nodes_.contains(&src)) {
      return Error(
          absl::StrFormat("it reads '%s:%d', an output of an input's node that is not "
                          "an input",
                          src.name(), index));
    }
    return BodyTensorName(src, index);
  }

  absl::Status AddBody(const std::vector<const Node*>& roots) {
    std::vector<const Node*> stack, body;
    absl::flat_hash_set<const Node*> seen;
    for (const Node* root : roots) {
      if (!input_nodes_.contains(root) && seen.insert(root).second) stack.push_back(root);
    }
    while (!stack.empty()) {
      const Node* node = stack.back();
      stack.pop_back();
      body.push_back(node);
      for (const Edge* edge : node->in_edges()) {
        if (edge == nullptr || input_nodes_.contains(edge->src)) continue;
        if (seen.insert(edge->src).second) stack.push_back(edge->src);
      }
    }
    std::sort(body.begin(), body.end(),
              [](const Node* a, const Node* b) { return a->id() < b->id(); });
    bool stateful = false;
    for (const Node* node : body) {
      if (node->op() == "Placeholder") {
        return Error(absl::StrFormat("it reads Placeholder '%s', which is not among its inputs",
                                     node->name()));
      }
      stateful = stateful || node->op_def().is_stateful();
      NodeDef* def = fdef_.add_node_def();
      *def = node->def();
      def->clear_input();
      for (int i = 0; i < node->num_inputs(); ++i) {
        const Edge* edge = node->input_edge(i);
        ASSIGN_OR_RETURN(std::string input, Source(*edge->src, edge->src_output));
        def->add_input(std::move(input));
      }
      for (const Edge* edge : node->in_edges()) {
        if (edge == nullptr || !edge->IsControl()) continue;
        if (!input_nodes_.contains(edge->src)) {
          def->add_input("^" + edge->src->name());
          continue;
        }
        for (const auto& [endpoint, arg] : args_) {
          if (endpoint.first == edge->src) {
            def->add_input("^" + arg);
            break;
          }
        }
      }
    }
    fdef_.mutable_signature()->set_is_stateful(stateful);
    return absl::OkStatus();
  }

  absl::Status AddResults(const FunctionOutputs& outputs) {
    if (!outputs.names.empty() && outputs.names.size() != outputs.values.size()) {
      return Error(absl::StrFormat("%d result names for %d results", outputs.names.size(),
                                   outputs.values.size()));
    }
    absl::flat_hash_set<std::string> used;
    for (size_t i = 0; i < outputs.values.size(); ++i) {
      const Output& value = outputs.values[i];
      const std::string name =
          outputs.names.empty() ? absl::StrCat("output_", i) : outputs.names[i];
      if (name.empty() || !used.insert(name).second) {
        return Error(absl::StrFormat("result name '%s' is empty or repeated", name));
      }
      OpDef::ArgDef* arg = fdef_.mutable_signature()->add_output_arg();
      arg->set_name(name);
      arg->set_type(BaseType(value.type()));
      ASSIGN_OR_RETURN(std::string source, Source(*value.node(), value.index()));
      (*fdef_.mutable_ret())[name] = std::move(source);
    }
    for (const Operation& op : outputs.control) {
      if (input_nodes_.contains(op.node())) continue;
      fdef_.mutable_signature()->add_control_output(op.name());
      (*fdef_.mutable_control_ret())[op.name()] = op.name();
    }
    return absl::OkStatus();
  }

  const std::string& name_;
  const std::vector<Output>& inputs_;
  FunctionDef fdef_;
  absl::flat_hash_map<Endpoint, std::string> args_;
  absl::flat_hash_set<const Node*> input_nodes_;
};

}  // namespace

absl::StatusOr<FunctionDef> GraphToFunctionDef(const Graph& body, const std::string& name,
                                               const std::vector<Output>& inputs,
                                               const FunctionOutputs& outputs) {
  if (name.empty()) return absl::InvalidArgumentError("a function needs a name");
  if (body.registry().Find(name) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("function '%s': it has the name of an op", name));
  }
  return FunctionBuilder(name, inputs).Build(outputs);
}

absl::StatusOr<std::vector<Output>> CallFunction(const Scope& scope, const FunctionDef& function,
                                                 const std::vector<Output>& args) {
  RETURN_IF_ERROR(scope.status());
  FunctionDefLibrary& library = scope.graph()->library();
  const std::string& name = function.signature().name();
  const auto same_name = [&](const FunctionDef& f) { return f.signature().name() == name; };
  auto it = std::find_if(library.function().begin(), library.function().end(), same_name);
  if (it == library.function().end()) {
    *library.add_function() = function;
  } else if (!google::protobuf::util::MessageDifferencer::Equals(*it, function)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "function '%s' is already in the graph's library with another definition", name));
  }
  // Checked (and typed) as the import will check it.
  ASSIGN_OR_RETURN(FunctionLibrary checked,
                   FunctionLibrary::Create(library, scope.graph()->registry()));
  ASSIGN_OR_RETURN(auto types, checked.CallTypes(name, {}));
  if (args.size() != types.first.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("function '%s' takes %d arguments; the call passes %d", name,
                        types.first.size(), args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].ok() || BaseType(args[i].type()) != types.first[i]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "function '%s': argument %d is %s, the function takes %s", name, i,
          args[i].ok() ? DataTypeString(args[i].type()) : "null", DataTypeString(types.first[i])));
    }
  }
  NameAttrList f;
  f.set_name(name);
  const Operation call =
      NodeBuilder(
          scope, function.signature().is_stateful() ? "StatefulPartitionedCall" : "PartitionedCall")
          .Input(args)
          .Attr("Tin", MakeAttr(types.first))
          .Attr("Tout", MakeAttr(types.second))
          .Attr("f", MakeAttr(f))
          .Finalize();
  RETURN_IF_ERROR(scope.status());
  std::vector<Output> results;
  for (size_t i = 0; i < types.second.size(); ++i) {
    results.emplace_back(call, static_cast<int>(i));
  }
  return results;
}

}  // namespace rill
