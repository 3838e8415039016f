#include "graph/scope.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "graph/device_spec.h"

namespace rill {

const std::string& Operation::name() const {
  static const std::string* const kEmpty = new std::string;
  return node_ != nullptr ? node_->name() : *kEmpty;
}

DataType Output::type() const { return ok() ? node()->output_type(index_) : DT_INVALID; }

const PartialTensorShape& Output::shape() const {
  static const PartialTensorShape* const kUnknown = new PartialTensorShape;
  return ok() ? node()->output_shape(index_) : *kUnknown;
}

std::string Output::name() const {
  if (!ok()) return "";
  return index_ == 0 ? node()->name() : node()->name() + ":" + std::to_string(index_);
}

// What every scope derived from one root shares.
struct Scope::Shared {
  explicit Shared(const OpRegistry& registry) : graph(registry) {}

  Graph graph;
  absl::Status status;
  // Full name -> the last suffix handed out for it ("MatMul" -> 2 after
  // "MatMul", "MatMul_1", "MatMul_2"). Ops and sub-scopes share the map, so
  // an op and a sub-scope never get the same name.
  absl::flat_hash_map<std::string, int> name_counts;
  std::vector<Operation> initializers;

  std::string UniqueName(const std::string& name) {
    auto [it, inserted] = name_counts.try_emplace(name, 0);
    if (inserted) return name;
    std::string candidate;
    do {
      candidate = name + "_" + std::to_string(++it->second);
    } while (name_counts.contains(candidate));
    name_counts.emplace(candidate, 0);
    return candidate;
  }
};

Scope::Scope(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

Scope Scope::NewRootScope(const OpRegistry& registry) {
  return Scope(std::make_shared<Shared>(registry));
}

Scope Scope::NewSubScope(std::string_view child_scope_name) const {
  Scope child = *this;
  child.op_name_.clear();
  if (child_scope_name.empty()) return child;
  child.name_prefix_ = shared_->UniqueName(name_prefix_ + std::string(child_scope_name)) + "/";
  return child;
}

Scope Scope::WithOpName(std::string_view name) const {
  Scope child = *this;
  child.op_name_ = std::string(name);
  return child;
}

Scope Scope::ColocateWith(const Operation& op) const {
  Scope child = *this;
  if (op.node() == nullptr) {
    UpdateStatus(absl::InvalidArgumentError("ColocateWith: the op is null (an earlier op failed)"));
    return child;
  }
  const NodeDef& target = op.node()->def();
  std::vector<std::string> groups;
  if (auto it = target.attr().find("_class"); it != target.attr().end()) {
    for (const std::string& entry : it->second.list().s()) {
      if (entry.starts_with("loc:@")) groups.push_back(entry);
    }
  }
  if (groups.empty()) groups.push_back("loc:@" + target.name());
  for (std::string& group : groups) {
    if (std::find(child.colocation_groups_.begin(), child.colocation_groups_.end(), group) ==
        child.colocation_groups_.end()) {
      child.colocation_groups_.push_back(std::move(group));
    }
  }
  // As tf.colocate_with: the device scopes around no longer apply.
  child.device_.clear();
  if (!target.device().empty()) child.colocation_device_ = target.device();
  return child;
}

Scope Scope::ColocateOnlyWith(const Operation& op) const {
  Scope outside = *this;
  outside.colocation_groups_.clear();
  outside.colocation_device_.clear();
  return outside.ColocateWith(op);
}

Scope Scope::WithDevice(std::string_view device) const {
  Scope child = *this;
  absl::StatusOr<DeviceSpec> inner = DeviceSpec::Parse(device);
  if (!inner.ok()) {
    UpdateStatus(inner.status());
    return child;
  }
  // device_ is always canonical, so it parses.
  const DeviceSpec outer = DeviceSpec::Parse(device_).value();
  child.device_ = DeviceSpec::Override(outer, *inner).ToString();
  return child;
}

Scope Scope::WithControlDependencies(absl::Span<const Operation> deps) const {
  Scope child = *this;
  child.control_deps_.insert(child.control_deps_.end(), deps.begin(), deps.end());
  return child;
}

Scope Scope::WithControlDependencies(const Output& dep) const {
  return WithControlDependencies({dep.op()});
}

bool IsValidOutput(const Output& output) {
  return output.ok() && output.index() >= 0 && output.index() < output.node()->num_outputs();
}

Scope Scope::WithInputMapper(InputMapper mapper) const {
  Scope child = *this;
  if (input_mapper_ == nullptr) {
    child.input_mapper_ = std::make_shared<const InputMapper>(std::move(mapper));
  } else {
    // The new (inner) mapper first; what it returns is still outside the
    // outer builder's ops or already inside them.
    child.input_mapper_ = std::make_shared<const InputMapper>(
        [inner = std::move(mapper), outer = input_mapper_](const Output& input) {
          return (*outer)(inner(input));
        });
  }
  return child;
}

Scope Scope::WithoutInputMapper() const {
  Scope child = *this;
  child.input_mapper_ = nullptr;
  return child;
}

Output Scope::MapInput(const Output& input) const {
  if (input_mapper_ == nullptr || !input.ok()) return input;
  return (*input_mapper_)(input);
}

Scope Scope::WithNoControlDependencies() const {
  Scope child = *this;
  child.control_deps_.clear();
  return child;
}

std::string Scope::GetUniqueNameForOp(std::string_view default_name) const {
  return shared_->UniqueName(name_prefix_ +
                             (op_name_.empty() ? std::string(default_name) : op_name_));
}

Graph* Scope::graph() const { return &shared_->graph; }
const OpRegistry& Scope::registry() const { return shared_->graph.registry(); }
const std::string& Scope::device() const { return device_; }
const std::vector<Operation>& Scope::control_deps() const { return control_deps_; }
const std::string& Scope::name_prefix() const { return name_prefix_; }

bool Scope::ok() const { return shared_->status.ok(); }
absl::Status Scope::status() const { return shared_->status; }

void Scope::UpdateStatus(absl::Status status) const {
  if (shared_->status.ok()) shared_->status = std::move(status);
}

absl::StatusOr<GraphDef> Scope::ToGraphDef() const {
  if (!ok()) return shared_->status;
  return shared_->graph.ToGraphDef();
}

void Scope::RegisterInitializer(const Operation& initializer) const {
  shared_->initializers.push_back(initializer);
}

std::vector<Operation> Scope::Initializers() const { return shared_->initializers; }

}  // namespace rill
