#include "ops/variable.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_attrs.h"
#include "graph/node_builder.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor_slice.h"
#include "ops/standard_ops.h"

namespace rill {
namespace {

// "hidden/weights 784 128 0,392:0,128": the full name, then the spec.
std::string SaveSliceInfoAttr(const SaveSliceInfo& info) {
  return absl::StrCat(info.full_name, " ", info.Spec());
}

absl::Status CheckSaveSliceInfo(std::string_view name, const SaveSliceInfo& info,
                                const PartialTensorShape& shape) {
  const size_t rank = info.full_shape.size();
  bool fits = !info.full_name.empty() && info.var_offset.size() == rank &&
              info.var_shape.size() == rank && shape.dims() == static_cast<int>(rank);
  for (size_t d = 0; fits && d < rank; ++d) {
    fits = info.var_offset[d] >= 0 && info.var_shape[d] == shape.dim_size(d) &&
           info.var_offset[d] + info.var_shape[d] <= info.full_shape[d];
  }
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "variable '%s': its slice '%s %s' does not hold its shape %s inside the full shape", name,
      info.full_name, info.Spec(), shape.DebugString()));
}

}  // namespace

std::string SaveSliceInfo::Spec() const {
  std::vector<std::string> slice;
  for (size_t d = 0; d < var_offset.size() && d < var_shape.size(); ++d) {
    slice.push_back(absl::StrCat(var_offset[d], ",", var_shape[d]));
  }
  return absl::StrCat(absl::StrJoin(full_shape, " "), " ", absl::StrJoin(slice, ":"));
}

absl::StatusOr<std::optional<SaveSliceInfo>> SaveSliceInfoOf(const Node& variable) {
  if (!variable.def().attr().contains(kSaveSliceInfoAttr)) return std::nullopt;
  ASSIGN_OR_RETURN(const std::string text, GetStringAttr(variable.def(), kSaveSliceInfoAttr));
  const auto malformed = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "variable '%s': attr %s '%s' %s", variable.name(), kSaveSliceInfoAttr, text, why));
  };
  const size_t space = text.find(' ');
  if (space == 0 || space == std::string::npos) return malformed("names no full variable");
  absl::StatusOr<std::optional<ShapeAndSlice>> spec = ParseShapeAndSlice(text.substr(space + 1));
  if (!spec.ok()) return malformed(spec.status().message());
  if (!spec->has_value()) return malformed("has no slice");
  const ShapeAndSlice& parsed = **spec;
  if (absl::Status fits = parsed.slice.CheckFits(parsed.full_shape); !fits.ok()) {
    return malformed(fits.message());
  }
  SaveSliceInfo info;
  info.full_name = text.substr(0, space);
  for (int d = 0; d < parsed.full_shape.dims(); ++d) {
    info.full_shape.push_back(parsed.full_shape.dim_size(d));
    info.var_offset.push_back(parsed.slice.start(d));
    info.var_shape.push_back(parsed.slice.length(d, parsed.full_shape));
  }
  return info;
}

Variable::Variable(const Scope& outer, std::string_view name, const ops::Input& initial_value,
                   std::optional<SaveSliceInfo> save_slice_info) {
  const Scope scope = outer.WithNoControlDependencies();
  if (!scope.ok()) return;
  if (!initial_value.status().ok()) {
    scope.UpdateStatus(initial_value.status());
    return;
  }
  const bool is_constant = initial_value.is_constant();
  if (!is_constant && !initial_value.output().ok()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrFormat(
        "the initial value of variable '%s' is null (an earlier op failed)", name)));
    return;
  }
  const DataType dtype =
      is_constant ? initial_value.constant().dtype() : BaseType(initial_value.output().type());
  const PartialTensorShape shape = is_constant
                                       ? PartialTensorShape(initial_value.constant().shape())
                                       : initial_value.output().shape();
  if (!shape.IsFullyDefined()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrFormat(
        "variable '%s': its initial value '%s' has shape %s, which is not fully known", name,
        initial_value.output().name(), shape.DebugString())));
    return;
  }

  NodeBuilder builder(scope.WithOpName(name), "VariableV2");
  builder.Attr("shape", MakeAttr(shape)).Attr("dtype", MakeAttr(dtype));
  if (save_slice_info.has_value()) {
    if (absl::Status bad = CheckSaveSliceInfo(name, *save_slice_info, shape); !bad.ok()) {
      scope.UpdateStatus(bad);
      return;
    }
    builder.Attr(kSaveSliceInfoAttr, MakeAttr(SaveSliceInfoAttr(*save_slice_info)));
  }
  const Operation variable = builder.Finalize();
  if (!variable.ok()) return;
  ref_ = Output(variable, 0);
  save_slice_info_ = std::move(save_slice_info);
  // The helper ops are named after the variable's unique name: "w_1/read".
  const std::string& full_name = variable.name();
  const std::string local = full_name.substr(scope.name_prefix().size());
  const Output init = is_constant ? Output(ops::Const(scope.WithOpName(local + "/initial_value"),
                                                      initial_value.constant(), dtype))
                                  : initial_value.output();
  if (!init.ok()) return;
  // As in TensorFlow, the ops that use the reference ask to be placed with
  // the variable.
  const AttrValue colocation = MakeAttr(std::vector<std::string>{"loc:@" + full_name});
  initializer_ = NodeBuilder(scope.WithOpName(local + "/Assign"), "Assign")
                     .Input(ref_)
                     .Input(init)
                     .Attr("_class", colocation)
                     .Finalize();
  if (!initializer_.ok()) return;
  const Operation read = NodeBuilder(scope.WithOpName(local + "/read"), "Identity")
                             .Input(ref_)
                             .Attr("_class", colocation)
                             .Finalize();
  if (!read.ok()) return;
  value_ = Output(read, 0);
  scope.RegisterInitializer(initializer_);
}

Operation GlobalVariablesInitializer(const Scope& scope) {
  NodeBuilder builder(scope.WithOpName("init"), "NoOp");
  for (const Operation& initializer : scope.Initializers()) builder.ControlInput(initializer);
  return builder.Finalize();
}

}  // namespace rill
