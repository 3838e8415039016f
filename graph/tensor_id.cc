// Parsing and printing tensor names ("node:1", "^node").
#include "graph/tensor_id.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_format.h"
#include "graph/graph.h"

namespace rill {
namespace {

bool IsNodeNameStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.';
}

}  // namespace

std::string TensorId::ToString() const {
  if (IsControl()) return absl::StrFormat("^%s", node);
  if (index == 0) return node;
  return absl::StrFormat("%s:%d", node, index);
}

bool IsValidNodeName(std::string_view name) {
  if (name.empty() || !IsNodeNameStart(name[0])) return false;
  for (char c : name) {
    if (!IsNodeNameStart(c) && c != '_' && c != '/') return false;
  }
  return true;
}

absl::StatusOr<TensorId> ParseTensorName(std::string_view name) {
  const auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat("invalid tensor name '%s': %s", name, why));
  };
  TensorId id;
  std::string_view node = name;
  if (node.starts_with("^")) {
    node.remove_prefix(1);
    id.index = kControlSlot;
  } else if (const size_t colon = node.find(':'); colon != std::string_view::npos) {
    const std::string_view digits = node.substr(colon + 1);
    node = node.substr(0, colon);
    if (digits.empty()) return invalid("missing output index after ':'");
    int64_t index = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return invalid("the output index must be decimal digits");
      index = index * 10 + (c - '0');
      if (index > std::numeric_limits<int32_t>::max()) return invalid("output index too large");
    }
    if (digits.size() > 1 && digits[0] == '0') return invalid("leading zero in output index");
    id.index = static_cast<int>(index);
  }
  if (!IsValidNodeName(node)) {
    return invalid("node names match [A-Za-z0-9.][A-Za-z0-9_./]*");
  }
  id.node = std::string(node);
  return id;
}

std::string TensorEndpoint::ToString() const { return node->name() + ":" + std::to_string(index); }

}  // namespace rill
