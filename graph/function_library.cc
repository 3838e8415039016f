#include "graph/function_library.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/node_signature.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

absl::Status FunctionError(std::string_view function, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("function '%s': %s", function, what));
}

absl::Status WithFunction(std::string_view function, std::string_view node,
                          const absl::Status& status) {
  return absl::Status(status.code(), absl::StrFormat("function '%s': node '%s': %s", function, node,
                                                     status.message()));
}

// Replaces each attr that names a placeholder of the function (an attr of
// its signature) by the instantiation's value, in func attrs too.
absl::Status SubstitutePlaceholders(const AttrMap& attrs, AttrValue* value) {
  if (!value->placeholder().empty()) {
    auto it = attrs.find(value->placeholder());
    if (it == attrs.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("attr placeholder '%s' has no value", value->placeholder()));
    }
    *value = it->second;
    return absl::OkStatus();
  }
  if (value->has_func()) {
    for (auto& [name, inner] : *value->mutable_func()->mutable_attr()) {
      RETURN_IF_ERROR(SubstitutePlaceholders(attrs, &inner));
    }
  }
  if (value->has_list()) {
    for (NameAttrList& func : *value->mutable_list()->mutable_func()) {
      for (auto& [name, inner] : *func.mutable_attr()) {
        RETURN_IF_ERROR(SubstitutePlaceholders(attrs, &inner));
      }
    }
  }
  return absl::OkStatus();
}

bool IsListArg(const OpDef::ArgDef& arg) {
  return !arg.number_attr().empty() || !arg.type_list_attr().empty();
}

// Whether a value of type `actual` may feed an input of type `expected`:
// a reference feeds a value input, not the reverse.
bool TypeFits(DataType actual, DataType expected) {
  return IsRefType(expected) ? actual == expected : BaseType(actual) == expected;
}

// What a name in a function body stands for: an argument (flat arguments
// [first, first + n)) or outputs [first, first + n) of a body node.
struct NameInfo {
  bool is_arg = false;
  int first = 0;
  DataTypeVector types;
  std::string node;
};

class Instantiation {
 public:
  Instantiation(const FunctionLibrary& library, const FunctionDef& fdef, const AttrMap& attrs)
      : library_(library), fdef_(fdef), name_(fdef.signature().name()), attrs_(attrs) {}

  absl::StatusOr<FunctionBody> Run() {
    const OpDef& signature = fdef_.signature();
    NodeDef call;
    call.set_op(name_);
    *call.mutable_attr() = attrs_;
    AddDefaultsToNodeDef(signature, &call);
    for (const OpDef::AttrDef& attr : signature.attr()) {
      if (!call.attr().contains(attr.name())) {
        return FunctionError(name_,
                             absl::StrFormat("the call gives no value for attr '%s'", attr.name()));
      }
    }
    absl::StatusOr<NodeSignature> types = ComputeNodeSignature(call, signature);
    if (!types.ok()) return FunctionError(name_, std::string(types.status().message()));
    RETURN_IF_ERROR(IndexArgs(*types));
    for (const NodeDef& node : fdef_.node_def()) RETURN_IF_ERROR(AddNode(node));
    for (size_t i = 0; i < body_.nodes.size(); ++i) {
      absl::Status status = MapInputs(&body_.nodes[i], signatures_[i]);
      if (!status.ok()) return WithFunction(name_, body_.nodes[i].name(), status);
    }
    RETURN_IF_ERROR(MapReturns(*types));
    return std::move(body_);
  }

 private:
  absl::Status AddName(const std::string& name, NameInfo info) {
    if (!names_.emplace(name, std::move(info)).second) {
      return FunctionError(name_, absl::StrFormat("the name '%s' is used twice", name));
    }
    return absl::OkStatus();
  }

  absl::Status IndexArgs(const NodeSignature& types) {
    const OpDef& signature = fdef_.signature();
    for (int i = 0; i < signature.input_arg_size(); ++i) {
      const OpDef::ArgDef& arg = signature.input_arg(i);
      const auto [begin, end] = types.input_arg_ranges[i];
      const DataTypeVector arg_types(types.input_types.begin() + begin,
                                     types.input_types.begin() + end);
      RETURN_IF_ERROR(AddName(arg.name(), {true, begin, arg_types, ""}));
      for (int k = 0; k < end - begin; ++k) {
        RETURN_IF_ERROR(
            AddName(absl::StrCat(arg.name(), ":", k), {true, begin + k, {arg_types[k]}, ""}));
        body_.arg_nodes.push_back(IsListArg(arg) ? absl::StrCat(arg.name(), "_", k) : arg.name());
        body_.arg_types.push_back(BaseType(arg_types[k]));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddNode(const NodeDef& original) {
    NodeDef node = original;
    if (node.name().empty()) return FunctionError(name_, "a body node has no name");
    for (auto& [attr, value] : *node.mutable_attr()) {
      absl::Status status = SubstitutePlaceholders(attrs_, &value);
      if (!status.ok()) return WithFunction(name_, node.name(), status);
    }
    absl::StatusOr<const OpDef*> op_def = library_.Signature(node.op());
    if (!op_def.ok()) return WithFunction(name_, node.name(), op_def.status());
    AddDefaultsToNodeDef(**op_def, &node);
    absl::StatusOr<NodeSignature> signature = ComputeNodeSignature(node, **op_def);
    if (!signature.ok()) return WithFunction(name_, node.name(), signature.status());
    if (names_.contains(node.name()) || !body_names_.insert(node.name()).second) {
      return FunctionError(name_, absl::StrFormat("the name '%s' is used twice", node.name()));
    }
    for (int j = 0; j < (*op_def)->output_arg_size(); ++j) {
      const auto [begin, end] = signature->output_arg_ranges[j];
      const DataTypeVector out(signature->output_types.begin() + begin,
                               signature->output_types.begin() + end);
      const std::string base = absl::StrCat(node.name(), ":", (*op_def)->output_arg(j).name());
      RETURN_IF_ERROR(AddName(base, {false, begin, out, node.name()}));
      for (int k = 0; k < end - begin; ++k) {
        RETURN_IF_ERROR(
            AddName(absl::StrCat(base, ":", k), {false, begin + k, {out[k]}, node.name()}));
      }
    }
    signatures_.push_back(std::move(*signature));
    body_.nodes.push_back(std::move(node));
    return absl::OkStatus();
  }

  std::string TensorName(const NameInfo& info, int k) const {
    return info.is_arg ? body_.arg_nodes[info.first + k]
                       : absl::StrCat(info.node, ":", info.first + k);
  }

  // From the function's naming ("node:out_arg:k", "arg") to the graph's
  // ("node:flat_index"), checking each input's type.
  absl::Status MapInputs(NodeDef* node, const NodeSignature& signature) const {
    std::vector<std::string> inputs;
    int next = 0;
    const DataTypeVector& want = signature.input_types;
    for (const auto& [begin, end] : signature.input_arg_ranges) {
      for (int j = begin; j < end;) {
        if (next >= node->input_size() || absl::StartsWith(node->input(next), "^")) {
          return absl::InvalidArgumentError(
              absl::StrFormat("it has too few inputs: its op takes %d", want.size()));
        }
        const std::string& input = node->input(next++);
        auto it = names_.find(input);
        if (it == names_.end()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "input '%s' names no argument and no output of a node of the function", input));
        }
        const NameInfo& info = it->second;
        if (static_cast<int>(info.types.size()) > end - j) {
          return absl::InvalidArgumentError(
              absl::StrFormat("input '%s' has more values than its argument takes", input));
        }
        for (size_t k = 0; k < info.types.size(); ++k, ++j) {
          if (!TypeFits(info.types[k], want[j])) {
            return absl::InvalidArgumentError(
                absl::StrFormat("input %d ('%s') is %s, but its op wants %s", j, input,
                                DataTypeString(info.types[k]), DataTypeString(want[j])));
          }
          inputs.push_back(TensorName(info, static_cast<int>(k)));
        }
      }
    }
    for (; next < node->input_size(); ++next) {
      const std::string& input = node->input(next);
      if (!absl::StartsWith(input, "^")) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "it has %d inputs or more, but its op takes %d", next + 1, want.size()));
      }
      const std::string target = input.substr(1);
      if (body_names_.contains(target)) {
        inputs.push_back(input);
        continue;
      }
      auto it = names_.find(target);
      if (it == names_.end() || !it->second.is_arg) {
        return absl::InvalidArgumentError(
            absl::StrFormat("control input '%s' names nothing in the function", input));
      }
      inputs.push_back("^" + body_.arg_nodes[it->second.first]);
    }
    node->clear_input();
    for (std::string& input : inputs) node->add_input(std::move(input));
    return absl::OkStatus();
  }

  absl::Status MapReturns(const NodeSignature& types) {
    const OpDef& signature = fdef_.signature();
    for (int i = 0; i < signature.output_arg_size(); ++i) {
      const std::string& output = signature.output_arg(i).name();
      const std::string& ret = fdef_.ret().at(output);
      auto it = names_.find(ret);
      if (it == names_.end()) {
        return FunctionError(name_, absl::StrFormat("return '%s' names '%s', which is not in "
                                                    "the function",
                                                    output, ret));
      }
      const auto [begin, end] = types.output_arg_ranges[i];
      const NameInfo& info = it->second;
      if (static_cast<int>(info.types.size()) != end - begin) {
        return FunctionError(name_, absl::StrFormat("return '%s' ('%s') has %d values, the "
                                                    "signature says %d",
                                                    output, ret, info.types.size(), end - begin));
      }
      for (int k = 0; k < end - begin; ++k) {
        const DataType want = types.output_types[begin + k];
        if (BaseType(info.types[k]) != BaseType(want)) {
          return FunctionError(name_, absl::StrFormat("return '%s' ('%s') is %s, the signature "
                                                      "says %s",
                                                      output, ret, DataTypeString(info.types[k]),
                                                      DataTypeString(want)));
        }
        body_.rets.push_back(TensorName(info, k));
        body_.ret_types.push_back(BaseType(want));
      }
    }
    std::vector<std::pair<std::string, std::string>> control(fdef_.control_ret().begin(),
                                                             fdef_.control_ret().end());
    std::sort(control.begin(), control.end());
    for (const auto& [output, node] : control) {
      if (!body_names_.contains(node)) {
        return FunctionError(name_, absl::StrFormat("control return '%s' names '%s', which is "
                                                    "not a node of the function",
                                                    output, node));
      }
      body_.control_rets.push_back(node);
    }
    return absl::OkStatus();
  }

  const FunctionLibrary& library_;
  const FunctionDef& fdef_;
  const std::string& name_;
  const AttrMap& attrs_;
  absl::flat_hash_map<std::string, NameInfo> names_;
  absl::flat_hash_set<std::string> body_names_;
  std::vector<NodeSignature> signatures_;  // Per body node.
  FunctionBody body_;
};

}  // namespace

absl::StatusOr<FunctionLibrary> FunctionLibrary::Create(const FunctionDefLibrary& library,
                                                        const OpRegistry& registry) {
  FunctionLibrary result(registry);
  for (const FunctionDef& fdef : library.function()) {
    const OpDef& signature = fdef.signature();
    const std::string& name = signature.name();
    if (name.empty()) {
      return absl::InvalidArgumentError("a function of the graph's library has no name");
    }
    if (registry.Find(name) != nullptr) {
      return FunctionError(name, "it has the name of an op");
    }
    absl::flat_hash_set<std::string> args;
    for (const OpDef::ArgDef& arg : signature.input_arg()) {
      if (arg.name().empty() || !args.insert(arg.name()).second) {
        return FunctionError(
            name, absl::StrFormat("argument name '%s' is empty or repeated", arg.name()));
      }
    }
    absl::flat_hash_set<std::string> outputs;
    for (const OpDef::ArgDef& arg : signature.output_arg()) {
      if (arg.name().empty() || !outputs.insert(arg.name()).second) {
        return FunctionError(name,
                             absl::StrFormat("output name '%s' is empty or repeated", arg.name()));
      }
      if (!fdef.ret().contains(arg.name())) {
        return FunctionError(name, absl::StrFormat("output '%s' has no return", arg.name()));
      }
    }
    for (const auto& [output, tensor] : fdef.ret()) {
      if (!outputs.contains(output)) {
        return FunctionError(name, absl::StrFormat("return '%s' is not an output of its "
                                                   "signature",
                                                   output));
      }
    }
    if (!result.functions_.emplace(name, fdef).second) {
      return FunctionError(name, "the library defines it twice");
    }
  }
  return result;
}

const FunctionDef* FunctionLibrary::Find(std::string_view name) const {
  auto it = functions_.find(std::string(name));
  return it == functions_.end() ? nullptr : &it->second;
}

absl::StatusOr<const OpDef*> FunctionLibrary::Signature(std::string_view op) const {
  if (const FunctionDef* fdef = Find(op)) return &fdef->signature();
  ASSIGN_OR_RETURN(const OpRegistration* registration, registry_->LookUp(op));
  return &registration->op_def;
}

absl::StatusOr<std::pair<DataTypeVector, DataTypeVector>> FunctionLibrary::CallTypes(
    std::string_view name, const AttrMap& attrs) const {
  const FunctionDef* fdef = Find(name);
  if (fdef == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("function '%s' is not defined in the graph's library", name));
  }
  NodeDef call;
  call.set_op(std::string(name));
  *call.mutable_attr() = attrs;
  AddDefaultsToNodeDef(fdef->signature(), &call);
  absl::StatusOr<NodeSignature> types = ComputeNodeSignature(call, fdef->signature());
  if (!types.ok()) return FunctionError(name, std::string(types.status().message()));
  return std::make_pair(types->input_types, types->output_types);
}

absl::StatusOr<FunctionBody> FunctionLibrary::Instantiate(std::string_view name,
                                                          const AttrMap& attrs) const {
  const FunctionDef* fdef = Find(name);
  if (fdef == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("function '%s' is not defined in the graph's library", name));
  }
  return Instantiation(*this, *fdef, attrs).Run();
}

}  // namespace rill
