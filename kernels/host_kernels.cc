#include "kernels/host_kernels.h"

#include <optional>
#include <utility>
#include <vector>

#include "kernels/framework/device_context.h"
#include "ops/registry.h"

namespace rill {
namespace {

// An op and those of its type attrs that a device's registration limits
// to int32.
struct OpAttrs {
  const char* op;
  std::vector<const char*> int32_attrs;
};

// Ops whose kernels never read their tensors' elements, and the attrs of
// their shape or size arguments.
const std::vector<OpAttrs>& DataAgnosticOps() {
  static const auto* ops = new std::vector<OpAttrs>{
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

// Ops whose CPU kernels also serve int32 tensors (shape arithmetic, kept
// on the host) on a device whose own kernels take the other types: these
// attrs are constrained to int32, and then every argument is on the host.
const std::vector<OpAttrs>& Int32Ops() {
  static const auto* ops = new std::vector<OpAttrs>{
      {"Pack", {"T"}},
      {"Unpack", {"T"}},
      {"ConcatV2", {"T", "Tidx"}},
      {"Slice", {"T", "Index"}},
      {"StridedSlice", {"T", "Index"}},
      {"Tile", {"T", "Tmultiples"}},
      {"Transpose", {"T", "Tperm"}},
      {"Fill", {"T", "index_type"}},
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
    KernelDef on_device = def;
    on_device.Device(device_type);
    for (const OpAttrs& agnostic : DataAgnosticOps()) {
      if (def.op() != agnostic.op) continue;
      for (const char* attr : agnostic.int32_attrs) on_device.TypeConstraint(attr, DT_INT32);
      add.emplace_back(std::move(on_device), factory);
      return;
    }
    for (const OpAttrs& int32_op : Int32Ops()) {
      if (def.op() != int32_op.op) continue;
      for (const char* attr : int32_op.int32_attrs) on_device.TypeConstraint(attr, DT_INT32);
    }
    absl::StatusOr<const OpRegistration*> op = StandardOps().LookUp(def.op());
    if (!op.ok() || !OnlyHostMemory((*op)->op_def, on_device)) return;
    add.emplace_back(std::move(on_device), factory);
  });
  for (auto& [def, factory] : add) registry.Register(std::move(def), std::move(factory));
}

}  // namespace rill
