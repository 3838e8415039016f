#include "graph/op_def_builder.h"

#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/arg_spec.h"
#include "graph/attr_spec.h"
#include "graph/op_spec_text.h"
#include "graph/shape_inference.h"

namespace rill {

OpDefBuilder::OpDefBuilder(std::string op_name) : op_name_(std::move(op_name)) {}

OpDefBuilder& OpDefBuilder::Input(std::string spec) {
  inputs_.push_back(std::move(spec));
  return *this;
}

OpDefBuilder& OpDefBuilder::Output(std::string spec) {
  outputs_.push_back(std::move(spec));
  return *this;
}

OpDefBuilder& OpDefBuilder::Attr(std::string spec) {
  attrs_.push_back(std::move(spec));
  return *this;
}

OpDefBuilder& OpDefBuilder::SetIsStateful() {
  is_stateful_ = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::SetIsCommutative() {
  is_commutative_ = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::SetIsAggregate() {
  is_aggregate_ = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::SetAllowsUninitializedInput() {
  allows_uninitialized_input_ = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  shape_fn_ = std::move(fn);
  return *this;
}

OpDefBuilder& OpDefBuilder::Doc(std::string summary) {
  summary_ = std::move(summary);
  return *this;
}

absl::StatusOr<OpRegistration> OpDefBuilder::Finalize() const {
  if (!op_spec::IsOpName(op_name_)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Op '%s': invalid op name (must match _?[A-Z][A-Za-z0-9_]*)", op_name_));
  }
  OpRegistration registration;
  OpDef& op_def = registration.op_def;
  op_def.set_name(op_name_);
  std::set<std::string, std::less<>> names;
  const auto spec_error = [&](std::string_view kind, std::string_view spec,
                              const absl::Status& status) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Op '%s': bad %s spec '%s': %s", op_name_, kind, spec, status.message()));
  };
  const auto check_unique = [&](const std::string& name) {
    if (names.insert(name).second) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat("duplicate name '%s'", name));
  };
  for (const std::string& spec : attrs_) {
    OpDef::AttrDef* attr = op_def.add_attr();
    absl::Status status = op_spec::ParseAttrSpec(spec, attr);
    if (status.ok()) status = check_unique(attr->name());
    if (!status.ok()) return spec_error("attr", spec, status);
  }
  for (const auto& [kind, specs] : {std::pair{"input", &inputs_}, std::pair{"output", &outputs_}}) {
    for (const std::string& spec : *specs) {
      OpDef::ArgDef* arg =
          std::string_view(kind) == "input" ? op_def.add_input_arg() : op_def.add_output_arg();
      absl::Status status = op_spec::ParseArgSpec(spec, &op_def, arg);
      if (status.ok()) status = check_unique(arg->name());
      if (!status.ok()) return spec_error(kind, spec, status);
    }
  }
  op_def.set_summary(summary_);
  op_def.set_is_stateful(is_stateful_);
  op_def.set_is_commutative(is_commutative_);
  op_def.set_is_aggregate(is_aggregate_);
  op_def.set_allows_uninitialized_input(allows_uninitialized_input_);
  registration.shape_fn = shape_fn_ ? shape_fn_ : ShapeFn(shape_fn::Unknown);
  return registration;
}

}  // namespace rill
