// op_wrapper_gen OUT.h OUT.cc: writes the typed C++ wrappers of every
// public op in the standard registry (rill::ops::MatMul, ...). One class per
// op, as TensorFlow's C++ API: the constructor takes the scope, one Input
// per input (InputList for lists), the attrs that the inputs cannot
// determine, and optional Attrs; the outputs are public members. A few
// classes add hand-written constructors (Const from a C++ literal).
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "graph/node_def_util.h"
#include "graph/op_registry.h"
#include "ops/registry.h"

namespace rill {
namespace {

// Names a parameter or member cannot take: C++ keywords and the names the
// generated code uses itself.
const std::set<std::string>& ReservedNames() {
  static const std::set<std::string>* const kNames = new std::set<std::string>{
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
      "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
      "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq",
      "private", "protected", "public", "register", "reinterpret_cast", "requires", "return",
      "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
      "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor",
      "xor_eq",
      // Used by the generated code.
      "scope", "attrs", "builder", "operation", "node", "ranges", "slot", "Attrs"};
  return *kNames;
}

// transpose_b -> TransposeB, T -> T, seed2 -> Seed2.
std::string CamelCase(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// Hands out C++ identifiers for one class: keywords and names already used
// get a trailing '_'.
class Names {
 public:
  std::string Take(const std::string& wanted) {
    std::string name = wanted;
    while (ReservedNames().contains(name) || used_.contains(name)) name += '_';
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

struct AttrType {
  std::string cpp;   // The parameter type.
  std::string make;  // The function that turns a value into an AttrValue.
};

AttrType CppAttrType(const OpDef& op, const OpDef::AttrDef& attr) {
  static const std::map<std::string, std::string>* const kTypes =
      new std::map<std::string, std::string>{
          {"int", "int64_t"},
          {"float", "float"},
          {"bool", "bool"},
          {"string", "std::string"},
          {"type", "::rill::DataType"},
          {"shape", "::rill::PartialTensorShape"},
          {"tensor", "::rill::Tensor"},
          {"func", "::rill::NameAttrList"},
          {"list(int)", "std::vector<int64_t>"},
          {"list(float)", "std::vector<float>"},
          {"list(string)", "std::vector<std::string>"},
          {"list(type)", "::rill::DataTypeVector"},
          {"list(shape)", "std::vector<::rill::PartialTensorShape>"},
          {"list(func)", "std::vector<::rill::NameAttrList>"},
      };
  const auto it = kTypes->find(attr.type());
  if (it == kTypes->end()) {
    std::fprintf(stderr, "op_wrapper_gen: op %s: attr '%s' has unsupported type '%s'\n",
                 op.name().c_str(), attr.name().c_str(), attr.type().c_str());
    std::exit(1);
  }
  return {it->second, attr.type() == "tensor" ? "::rill::ops::MakeTensorAttr" : "::rill::MakeAttr"};
}

// `var` handed on: moved unless it is a scalar.
std::string Pass(const AttrType& type, const std::string& var) {
  static const std::set<std::string>* const kScalars =
      new std::set<std::string>{"int64_t", "float", "bool", "::rill::DataType"};
  return kScalars->contains(type.cpp) ? var : "std::move(" + var + ")";
}

bool IsList(const OpDef::ArgDef& arg) {
  return !arg.number_attr().empty() || !arg.type_list_attr().empty();
}

// The generated form of one op.
struct OpClass {
  struct Param {
    std::string type;
    std::string name;
  };
  struct AttrParam {
    const OpDef::AttrDef* attr;
    AttrType type;
    std::string name;  // Parameter name, or for optional attrs the setter name.
  };
  struct OutputMember {
    std::string name;
    bool is_list;
  };

  const OpDef* op = nullptr;
  std::vector<Param> inputs;
  std::vector<AttrParam> required;
  std::vector<AttrParam> optional;
  std::vector<OutputMember> outputs;
};

OpClass Describe(const OpDef& op) {
  OpClass c;
  c.op = &op;
  Names names;
  std::set<std::string> inferred;
  for (const OpDef::ArgDef& arg : op.input_arg()) {
    c.inputs.push_back(
        {IsList(arg) ? "::rill::ops::InputList" : "::rill::ops::Input", names.Take(arg.name())});
    for (const std::string& attr : {arg.type_attr(), arg.number_attr(), arg.type_list_attr()}) {
      if (!attr.empty()) inferred.insert(attr);
    }
  }
  for (const OpDef::AttrDef& attr : op.attr()) {
    if (inferred.contains(attr.name())) continue;
    if (attr.has_default_value()) {
      c.optional.push_back({&attr, CppAttrType(op, attr), CamelCase(attr.name())});
    } else {
      c.required.push_back({&attr, CppAttrType(op, attr), names.Take(attr.name())});
    }
  }
  Names members;
  for (const OpDef::ArgDef& arg : op.output_arg()) {
    c.outputs.push_back({members.Take(arg.name()), IsList(arg)});
  }
  return c;
}

constexpr size_t kWidth = 100;

// Const from a C++ literal, as TensorFlow's ops::Const(scope, 2.f).
constexpr char kConstDeclarations[] =
    R"(  // A constant typed by its C++ literal: 2.f, 7, true, "hello", {1, 2, 3},
  // {{1.f, 2.f}, {3.f, 4.f}} or a Tensor. A malformed literal (a ragged
  // list, mixed types) is recorded as the scope's error.
  Const(const ::rill::Scope& scope, const ::rill::ops::Input::Initializer& value);
  // `value` in `shape`: a scalar repeated to fill it, or exactly
  // shape.num_elements() values in order (Const(scope, 0.f, {2, 3})).
  Const(const ::rill::Scope& scope, const ::rill::ops::Input::Initializer& value,
        const ::rill::TensorShape& shape);
)";

constexpr char kConstDefinitions[] =
    R"(Const::Const(const ::rill::Scope& scope, const ::rill::ops::Input::Initializer& value)
    : Const(scope, ::rill::ops::ConstantTensor(scope, value), value.tensor.dtype()) {}

Const::Const(const ::rill::Scope& scope, const ::rill::ops::Input::Initializer& value,
             const ::rill::TensorShape& shape)
    : Const(scope, value.WithShape(shape)) {}

)";

// Constructors written by hand beside the generated one, keyed by op: the
// declarations go into the class, the definitions after the generated
// constructor's.
struct ExtraConstructors {
  const char* declarations;
  const char* definitions;
};

const std::map<std::string, ExtraConstructors>& Extras() {
  static const std::map<std::string, ExtraConstructors>* const kExtras =
      new std::map<std::string, ExtraConstructors>{
          {"Const", {kConstDeclarations, kConstDefinitions}},
      };
  return *kExtras;
}

// `head` followed by "(const Scope& scope, Input a, ..., const Attrs& attrs =
// Attrs())", the parameters packed into lines of at most kWidth columns and
// continuation lines aligned after the parenthesis.
std::string Signature(const std::string& head, const OpClass& c, bool with_defaults) {
  std::vector<std::string> params = {"const ::rill::Scope& scope"};
  for (const OpClass::Param& p : c.inputs) params.push_back(p.type + " " + p.name);
  for (const OpClass::AttrParam& a : c.required) {
    params.push_back(a.type.cpp + " " + a.name);
  }
  if (!c.optional.empty()) {
    params.push_back(std::string("const Attrs& attrs") + (with_defaults ? " = Attrs()" : ""));
  }
  // Long heads ("SoftmaxCrossEntropyWithLogits::SoftmaxCrossEntropyWithLogits")
  // start the parameters on the next line, indented by four.
  const bool hang = head.size() > 50;
  const size_t indent = hang ? 4 : head.size() + 1;
  std::string out = head + "(";
  size_t column = out.size();
  if (hang) {
    out += '\n';
    out.append(indent, ' ');
    column = indent;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const bool last = i + 1 == params.size();
    // The closing ");" or ") {" has to fit too.
    const size_t width = params[i].size() + (last ? 3 : 1);
    if (i > 0) {
      if (column + 1 + width > kWidth) {
        out += '\n';
        out.append(indent, ' ');
        column = indent;
      } else {
        out += ' ';
        ++column;
      }
    }
    out += params[i];
    out += last ? ")" : ",";
    column += params[i].size() + 1;
  }
  return out;
}

std::string Article(const std::string& noun) {
  return std::string("AEIOU").find(noun.front()) == std::string::npos ? "a" : "an";
}

void WriteClass(const OpClass& c, std::string& h) {
  const std::string& name = c.op->name();
  h += "// Adds " + Article(name) + " " + name + " node.\n";
  h += fmt::format("class {} {{\n public:\n", name);
  if (!c.optional.empty()) {
    h += "  struct Attrs {\n";
    for (const OpClass::AttrParam& a : c.optional) {
      h += fmt::format("    // Default: {}.\n", SummarizeAttrValue(a.attr->default_value()));
      h += fmt::format(
          "    Attrs {}({} x) const {{\n      Attrs r = *this;\n      r.{}_ = {};\n"
          "      return r;\n    }}\n",
          a.name, a.type.cpp, a.attr->name(), Pass(a.type, "x"));
    }
    h += "\n";
    for (const OpClass::AttrParam& a : c.optional) {
      h += fmt::format("    std::optional<{}> {}_;\n", a.type.cpp, a.attr->name());
    }
    h += "  };\n\n";
  }
  // Only a scope (and attrs): no implicit conversion from a Scope.
  const bool explicit_ctor = c.inputs.empty() && c.required.empty();
  h += Signature(fmt::format("  {}{}", explicit_ctor ? "explicit " : "", name), c,
                 /*with_defaults=*/true) +
       ";\n";
  if (const auto extra = Extras().find(name); extra != Extras().end()) {
    h += extra->second.declarations;
  }
  for (const OpClass::AttrParam& a : c.optional) {
    // A static shortcut named like the class would be a constructor.
    if (a.name == name) continue;
    const std::string decl = fmt::format("  static Attrs {}({} x) {{", a.name, a.type.cpp);
    const std::string body = fmt::format("return Attrs().{}({});", a.name, Pass(a.type, "x"));
    h += decl.size() + body.size() + 3 <= kWidth ? decl + " " + body + " }\n"
                                                 : decl + "\n    " + body + "\n  }\n";
  }
  if (c.outputs.size() == 1 && !c.outputs[0].is_list) {
    h += fmt::format("\n  operator ::rill::Output() const {{ return {}; }}  // NOLINT\n",
                     c.outputs[0].name);
    h += "  ::rill::Node* node() const { return operation.node(); }\n";
  } else if (c.outputs.empty()) {
    h += "\n  operator ::rill::Operation() const { return operation; }  // NOLINT\n";
  }
  h += "\n  ::rill::Operation operation;\n";
  for (const OpClass::OutputMember& o : c.outputs) {
    h += fmt::format("  ::rill::{} {};\n", o.is_list ? "OutputList" : "Output", o.name);
  }
  h += "};\n\n";
}

void WriteConstructor(const OpClass& c, std::string& cc) {
  const std::string& name = c.op->name();
  cc += Signature(fmt::format("{0}::{0}", name), c, /*with_defaults=*/false) + " {\n";
  cc += "  if (!scope.ok()) return;\n";
  cc += fmt::format("  ::rill::NodeBuilder builder(scope, \"{}\");\n", name);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const bool list = IsList(c.op->input_arg(static_cast<int>(i)));
    cc += fmt::format("  builder.Input(::rill::ops::{}(scope, {}));\n",
                      list ? "AsNodeOutList" : "AsNodeOut", c.inputs[i].name);
  }
  for (const OpClass::AttrParam& a : c.required) {
    cc += fmt::format("  builder.Attr(\"{}\", {}({}));\n", a.attr->name(), a.type.make, a.name);
  }
  for (const OpClass::AttrParam& a : c.optional) {
    const std::string member = "attrs." + a.attr->name() + "_";
    cc += fmt::format("  if ({0}) {{\n    builder.Attr(\"{1}\", {2}(*{0}));\n  }}\n", member,
                      a.attr->name(), a.type.make);
  }
  cc += "  operation = builder.Finalize();\n";
  if (!c.outputs.empty()) cc += "  if (!operation.ok()) return;\n";
  bool static_index = true;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const OpClass::OutputMember& o = c.outputs[i];
    if (static_index && !o.is_list) {
      cc += fmt::format("  {} = ::rill::Output(operation, {});\n", o.name, i);
      continue;
    }
    // After a list output the slots depend on the list lengths.
    if (static_index) {
      cc += "  const auto& ranges = operation.node()->signature().output_arg_ranges;\n";
      static_index = false;
    }
    if (o.is_list) {
      cc += fmt::format(
          "  for (int slot = ranges[{0}].first; slot < ranges[{0}].second; ++slot) {{\n"
          "    {1}.emplace_back(operation, slot);\n  }}\n",
          i, o.name);
    } else {
      cc += fmt::format("  {} = ::rill::Output(operation, ranges[{}].first);\n", o.name, i);
    }
  }
  cc += "}\n\n";
  if (const auto extra = Extras().find(name); extra != Extras().end()) {
    cc += extra->second.definitions;
  }
}

constexpr char kHeaderTop[] =
    R"(// Typed C++ wrappers of the standard ops, one class per op, written by
// op_wrapper_gen from the op registry. Do not edit.
#ifndef RILL_OPS_STANDARD_OPS_H_
#define RILL_OPS_STANDARD_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/proto/attr_value.pb.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "ops/input.h"

namespace rill::ops {

)";

constexpr char kHeaderBottom[] = R"(}  // namespace rill::ops

#endif  // RILL_OPS_STANDARD_OPS_H_
)";

constexpr char kSourceTop[] = R"(// Written by op_wrapper_gen from the op registry. Do not edit.
#include "ops/standard_ops.h"

#include "graph/node_builder.h"
#include "graph/node_def_util.h"
#include "graph/tensor_proto_util.h"

namespace rill::ops {

)";

constexpr char kSourceBottom[] = "}  // namespace rill::ops\n";

// Leaves a file that already holds `text` untouched: ninja (restat) then
// rebuilds nothing that includes it when only an op's shape function or
// the graph library changed.
bool WriteFile(const char* path, const std::string& text) {
  {
    std::ifstream in(path, std::ios::binary);
    const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (old == text) return true;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "op_wrapper_gen: cannot write %s\n", path);
    return false;
  }
  return true;
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: op_wrapper_gen OUT.h OUT.cc\n");
    return 2;
  }
  const rill::OpRegistry& registry = rill::StandardOps();
  std::string h = rill::kHeaderTop;
  std::string cc = rill::kSourceTop;
  for (const std::string& name : registry.OpNames()) {
    if (name.starts_with('_')) continue;  // Internal ops (_Send, _Recv).
    const rill::OpClass c = rill::Describe(registry.Find(name)->op_def);
    rill::WriteClass(c, h);
    rill::WriteConstructor(c, cc);
  }
  h += rill::kHeaderBottom;
  cc.resize(cc.size() - 1);  // One blank line between definitions, none at the end.
  cc += rill::kSourceBottom;
  return rill::WriteFile(argv[1], h) && rill::WriteFile(argv[2], cc) ? 0 : 1;
}
