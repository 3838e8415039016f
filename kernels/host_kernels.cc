#include "kernels/host_kernels.h"

#include <optional>
#include <utility>
#include <vector>

#include "kernels/device_context.h"
#include "ops/registry.h"

namespace rill {
namespace {

// Ops whose kernels never read their tensors' elements, and the attrs of
// their shape or size arguments, which must then be int32 (on the host).
struct DataAgnostic {
  const char* op;
  std::vector<const char*> host_attrs;
};
const std::vector<DataAgnostic>& DataAgnosticOps() {
  static const auto* ops = new std::vector<DataAgnostic>{
      {"Identity", {}},
      {"StopGradient", {}},
      {"PreventGradient", {}},
      {"Squeeze", {}},
      {"Reshape", {"Tshape"}},
      {"ExpandDims", {"Tdim"}},
      {"Shape", {"out_type"}},
      {"ShapeN", {"out_type"}},
      {"Size", {"out_type"}},
      {"Rank", {}},
      {"NoOp", {}},
      {"Placeholder", {}},
      {"PlaceholderWithDefault", {}},
  };
  return *ops;
}

// The types `arg` may take under `def`; nullopt when any type may.
std::optional<DataTypeVector> PossibleTypes(const OpDef& op_def, const KernelDef& def,
                                            const OpDef::ArgDef& arg) {
  if (arg.type() != DT_INVALID) return DataTypeVector{arg.type()};
  const std::string& attr = !arg.type_attr().empty() ? arg.type_attr() : arg.type_list_attr();
  for (const auto& [name, allowed] : def.constraints()) {
    if (name == attr) return allowed;
  }
  for (const OpDef::AttrDef& a : op_def.attr()) {
    if (a.name() != attr || !a.has_allowed_values()) continue;
    DataTypeVector types;
    for (int t : a.allowed_values().list().type()) types.push_back(static_cast<DataType>(t));
    return types;
  }
  return std::nullopt;
}

bool OnlyHostMemory(const OpDef& op_def, const KernelDef& def) {
  for (const auto* args : {&op_def.input_arg(), &op_def.output_arg()}) {
    for (const OpDef::ArgDef& arg : *args) {
      const std::optional<DataTypeVector> types = PossibleTypes(op_def, def, arg);
      if (!types.has_value()) return false;
      for (DataType t : *types) {
        if (!InHostMemory(t)) return false;
      }
    }
  }
  return true;
}

}  // namespace

void RegisterHostKernels(KernelRegistry& registry, const std::string& device_type) {
  std::vector<std::pair<KernelDef, KernelFactory>> add;
  registry.ForEach([&](const KernelDef& def, const KernelFactory& factory) {
    if (def.device_type() != kDeviceCpu) return;
    for (const DataAgnostic& agnostic : DataAgnosticOps()) {
      if (def.op() != agnostic.op) continue;
      KernelDef on_device = def;
      on_device.Device(device_type);
      for (const char* attr : agnostic.host_attrs) on_device.TypeConstraint(attr, DT_INT32);
      add.emplace_back(std::move(on_device), factory);
      return;
    }
    absl::StatusOr<const OpRegistration*> op = StandardOps().LookUp(def.op());
    if (!op.ok() || !OnlyHostMemory((*op)->op_def, def)) return;
    KernelDef on_device = def;
    on_device.Device(device_type);
    add.emplace_back(std::move(on_device), factory);
  });
  for (auto& [def, factory] : add) registry.Register(std::move(def), std::move(factory));
}

}  // namespace rill
