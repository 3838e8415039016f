#include "kernels/framework/kernel_registry.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

bool Matches(const KernelDef& def, const NodeDef& node, std::string_view device_type) {
  if (def.device_type() != device_type) return false;
  for (const auto& [attr, allowed] : def.constraints()) {
    auto it = node.attr().find(attr);
    if (it == node.attr().end()) return false;
    const AttrValue& value = it->second;
    if (value.value_case() == AttrValue::kType) {
      if (std::find(allowed.begin(), allowed.end(), value.type()) == allowed.end()) return false;
    } else if (value.value_case() == AttrValue::kList) {
      for (int t : value.list().type()) {
        if (std::find(allowed.begin(), allowed.end(), static_cast<DataType>(t)) == allowed.end()) {
          return false;
        }
      }
    } else {
      return false;
    }
  }
  return true;
}

void AppendTypeName(std::string* out, DataType type) { out->append(DataTypeString(type)); }

std::string TypeSet(const DataTypeVector& types) {
  return absl::StrCat("{", absl::StrJoin(types, ", ", AppendTypeName), "}");
}

// "T=int8, dtypes=[float, int64]": the node's type and list(type) attrs in
// the op's declaration order; "no type attrs" when it has none.
std::string TypeAttrs(const NodeDef& node, const OpDef& op_def) {
  std::vector<std::string> parts;
  for (const OpDef::AttrDef& attr : op_def.attr()) {
    const auto it = node.attr().find(attr.name());
    if (it == node.attr().end()) continue;
    if (attr.type() == "type") {
      parts.push_back(absl::StrCat(attr.name(), "=", DataTypeString(it->second.type())));
    } else if (attr.type() == "list(type)") {
      DataTypeVector types;
      for (int t : it->second.list().type()) types.push_back(static_cast<DataType>(t));
      parts.push_back(
          absl::StrCat(attr.name(), "=[", absl::StrJoin(types, ", ", AppendTypeName), "]"));
    }
  }
  return parts.empty() ? "no type attrs" : absl::StrJoin(parts, ", ");
}

// What the kernels of one device type accept, summarized per constrained
// attr as the types some kernel takes ("T in {float, double}"); empty when
// one of them takes any types.
std::string ConstraintSummary(const std::vector<const KernelDef*>& defs) {
  std::vector<std::pair<std::string, DataTypeVector>> allowed;  // In registration order.
  for (const KernelDef* def : defs) {
    if (def->constraints().empty()) return "";
    for (const auto& [attr, types] : def->constraints()) {
      auto it = std::find_if(allowed.begin(), allowed.end(),
                             // Init-capture: clang before 16 cannot capture a binding.
                             [&attr = attr](const auto& entry) { return entry.first == attr; });
      if (it == allowed.end()) it = allowed.insert(allowed.end(), {attr, {}});
      for (DataType t : types) {
        if (std::find(it->second.begin(), it->second.end(), t) == it->second.end()) {
          it->second.push_back(t);
        }
      }
    }
  }
  return absl::StrJoin(allowed, ", ", [](std::string* out, const auto& entry) {
    absl::StrAppend(out, entry.first, " in ", TypeSet(entry.second));
  });
}

}  // namespace

std::string KernelDefText(const KernelDef& def) {
  std::string text = def.op();
  for (const auto& [attr, types] : def.constraints()) {
    absl::StrAppend(&text, " ", attr, "=", absl::StrJoin(types, ",", AppendTypeName));
  }
  return text;
}

absl::StatusOr<KernelDef> ParseKernelDefText(std::string_view text, std::string device_type) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ' ', absl::SkipEmpty());
  if (words.empty()) return absl::InvalidArgumentError("an empty kernel definition");
  KernelDef def{std::string(words[0])};
  def.Device(std::move(device_type));
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t equals = words[i].find('=');
    if (equals == std::string_view::npos || equals == 0 || equals + 1 == words[i].size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "kernel definition '%s': '%s' is not ATTR=TYPE[,TYPE...]", text, words[i]));
    }
    DataTypeVector types;
    for (absl::string_view name : absl::StrSplit(words[i].substr(equals + 1), ',')) {
      const absl::StatusOr<DataType> type = DataTypeFromString({name.data(), name.size()});
      if (!type.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("kernel definition '%s': no type '%s'", text, name));
      }
      types.push_back(*type);
    }
    def.TypeConstraint(std::string(words[i].substr(0, equals)), std::move(types));
  }
  return def;
}

void KernelRegistry::Register(KernelDef def, KernelFactory factory) {
  std::string op = def.op();
  kernels_.emplace(std::move(op), Entry{std::move(def), std::move(factory)});
}

const KernelRegistry::Entry* KernelRegistry::Find(const NodeDef& node,
                                                  std::string_view device_type) const {
  auto [begin, end] = kernels_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    if (Matches(it->second.def, node, device_type)) return &it->second;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(
    const NodeDef& node, const OpDef& op_def, const NodeSignature& signature,
    std::string_view device_type) const {
  const Entry* entry = Find(node, device_type);
  if (entry == nullptr) return NoKernelError(node, op_def, device_type);
  const OpKernelConstruction construction(node, op_def, signature, std::string(device_type));
  return entry->factory(construction);
}

// Names the op, the node, the device type and the type attrs that matched
// nothing, then what is registered: the device type's constraints when it
// has kernels for the op, else every device type that has.
absl::Status KernelRegistry::NoKernelError(const NodeDef& node, const OpDef& op_def,
                                           std::string_view device_type) const {
  std::vector<std::string> device_types;  // In registration order.
  std::map<std::string, std::vector<const KernelDef*>, std::less<>> by_device;
  auto [begin, end] = kernels_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    const KernelDef& def = it->second.def;
    std::vector<const KernelDef*>& defs = by_device[def.device_type()];
    if (defs.empty()) device_types.push_back(def.device_type());
    defs.push_back(&def);
  }
  std::string registered;
  if (const auto own = by_device.find(device_type); own != by_device.end()) {
    registered = absl::StrFormat("registered %s kernels take %s", device_type,
                                 ConstraintSummary(own->second));
  } else if (device_types.empty()) {
    registered = "registered kernels: none";
  } else {
    registered = absl::StrCat(
        "registered kernels: ",
        absl::StrJoin(device_types, ", ", [&](std::string* out, const std::string& type) {
          const std::string summary = ConstraintSummary(by_device[type]);
          absl::StrAppend(out, type, summary.empty() ? "" : absl::StrCat(" (", summary, ")"));
        }));
  }
  // The executor puts the node in front, as for every kernel error.
  return absl::NotFoundError(absl::StrFormat("no %s kernel for op '%s' with %s; %s", device_type,
                                             node.op(), TypeAttrs(node, op_def), registered));
}

bool KernelRegistry::HasKernel(const NodeDef& node, std::string_view device_type) const {
  return Find(node, device_type) != nullptr;
}

void KernelRegistry::ForEach(
    const std::function<void(const KernelDef&, const KernelFactory&)>& visit) const {
  for (const auto& [op, entry] : kernels_) visit(entry.def, entry.factory);
}

std::vector<std::string> KernelRegistry::DeviceTypesFor(std::string_view op) const {
  std::vector<std::string> types;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) {
    if (std::find(types.begin(), types.end(), it->second.def.device_type()) == types.end()) {
      types.push_back(it->second.def.device_type());
    }
  }
  return types;
}

}  // namespace rill
