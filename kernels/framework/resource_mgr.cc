#include "kernels/framework/resource_mgr.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"

namespace rill {
namespace {

using Key = std::pair<std::string, std::string>;

Key MakeKey(std::string_view container, std::string_view name) {
  return {std::string(container), std::string(name)};
}

absl::Status WrongType(std::string_view container, std::string_view name, const char* have,
                       const char* want) {
  return absl::FailedPreconditionError(
      absl::StrFormat("resource %s/%s is a %s, not a %s", container, name, have, want));
}

}  // namespace

std::string Var::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrFormat("%s %s", DataTypeString(dtype_),
                         tensor_.IsInitialized() ? tensor_.shape().DebugString() : "uninitialized");
}

bool Var::is_initialized() const {
  absl::MutexLock lock(&mu_);
  return tensor_.IsInitialized();
}

absl::StatusOr<std::shared_ptr<ResourceBase>> ResourceMgr::LookupOrCreateBase(
    std::string_view container, std::string_view name, const char* type_name,
    const Creator& create) {
  absl::MutexLock lock(&mu_);
  Key key = MakeKey(container, name);
  if (auto it = resources_.find(key); it != resources_.end()) {
    const auto& [have, resource] = it->second;
    if (std::strcmp(have, type_name) != 0) return WrongType(container, name, have, type_name);
    return resource;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<ResourceBase> resource, create());
  resources_.emplace(std::move(key), std::make_pair(type_name, resource));
  return resource;
}

absl::StatusOr<std::shared_ptr<ResourceBase>> ResourceMgr::LookupBase(std::string_view container,
                                                                      std::string_view name,
                                                                      const char* type_name) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(MakeKey(container, name));
  if (it == resources_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("resource %s/%s (%s) does not exist", container, name, type_name));
  }
  const auto& [have, resource] = it->second;
  if (std::strcmp(have, type_name) != 0) return WrongType(container, name, have, type_name);
  return resource;
}

absl::Status ResourceMgr::Delete(std::string_view container, std::string_view name) {
  absl::MutexLock lock(&mu_);
  if (resources_.erase(MakeKey(container, name)) == 0) {
    return absl::NotFoundError(absl::StrFormat("resource %s/%s does not exist", container, name));
  }
  return absl::OkStatus();
}

void ResourceMgr::Cleanup(std::string_view container) {
  // Destroy outside the lock: a resource's destructor may be slow.
  std::vector<std::shared_ptr<ResourceBase>> dropped;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = resources_.begin(); it != resources_.end();) {
      if (it->first.first == container) {
        dropped.push_back(std::move(it->second.second));
        resources_.erase(it++);
      } else {
        ++it;
      }
    }
  }
}

void ResourceMgr::Clear() {
  absl::flat_hash_map<Key, std::pair<const char*, std::shared_ptr<ResourceBase>>> dropped;
  {
    absl::MutexLock lock(&mu_);
    dropped.swap(resources_);
  }
}

std::string RefInputName(const KernelContext& ctx, int input) {
  const NodeDef& node = ctx.node();
  if (input < node.input_size()) return node.input(input);
  return absl::StrFormat("input %d of %s", input, node.name());
}

absl::Status UninitializedValueError(const KernelContext& ctx, int input) {
  return absl::FailedPreconditionError(
      absl::StrFormat("Attempting to use uninitialized value %s", RefInputName(ctx, input)));
}

}  // namespace rill
