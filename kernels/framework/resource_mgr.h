// ResourceMgr: per-device state that outlives a step (variables, and later
// queues and accumulators), found by (container, name).
#ifndef RILL_KERNELS_FRAMEWORK_RESOURCE_MGR_H_
#define RILL_KERNELS_FRAMEWORK_RESOURCE_MGR_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/op_kernel.h"

namespace rill {

// A resource type declares `static constexpr char kTypeName[]`, the name
// that lookups compare and that messages show.
class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
};

// A variable's storage: the tensor (uninitialized until first assigned) and
// the mutex that guards it. Ref-style ops hand out &tensor and &mu and may
// write into the tensor in place; resource-variable ops only ever replace
// it, so a read may share its buffer. Thread safety: tensor() is read and
// written under mu().
class Var : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "Var";

  explicit Var(DataType dtype) : dtype_(dtype) {}
  // "float [2,3]", or "float uninitialized".
  std::string DebugString() const override;

  DataType dtype() const { return dtype_; }
  absl::Mutex* mu() { return &mu_; }
  Tensor* tensor() { return &tensor_; }  // Read and write under mu().
  bool is_initialized() const;           // Takes mu().

 private:
  const DataType dtype_;
  mutable absl::Mutex mu_;
  Tensor tensor_;
};

// Thread safety: all methods may be called concurrently.
class ResourceMgr {
 public:
  ResourceMgr() = default;
  ResourceMgr(const ResourceMgr&) = delete;
  ResourceMgr& operator=(const ResourceMgr&) = delete;

  // The resource (container, name) of type T, created by `create` when
  // absent. FAILED_PRECONDITION when it exists with another type; an error
  // of `create` is returned as is and nothing is stored. `create` runs
  // under the manager's lock, so concurrent callers agree on one resource;
  // it must not call back into the manager.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupOrCreate(
      std::string_view container, std::string_view name,
      const std::function<absl::StatusOr<std::shared_ptr<T>>()>& create);

  // NOT_FOUND names the container and resource when absent;
  // FAILED_PRECONDITION when it has another type.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Lookup(std::string_view container,
                                            std::string_view name) const;

  // NOT_FOUND when absent. Holders of the resource keep it alive.
  absl::Status Delete(std::string_view container, std::string_view name);
  // Drops every resource of `container`.
  void Cleanup(std::string_view container);
  // Drops everything.
  void Clear();

 private:
  using Creator = std::function<absl::StatusOr<std::shared_ptr<ResourceBase>>()>;

  absl::StatusOr<std::shared_ptr<ResourceBase>> LookupOrCreateBase(std::string_view container,
                                                                   std::string_view name,
                                                                   const char* type_name,
                                                                   const Creator& create);
  absl::StatusOr<std::shared_ptr<ResourceBase>> LookupBase(std::string_view container,
                                                           std::string_view name,
                                                           const char* type_name) const;

  mutable absl::Mutex mu_;
  // (container, name) -> (type name, resource).
  absl::flat_hash_map<std::pair<std::string, std::string>,
                      std::pair<const char*, std::shared_ptr<ResourceBase>>>
      resources_ ABSL_GUARDED_BY(mu_);
};

// The container a resource lives in when its node's `container` attr is
// empty.
inline constexpr char kDefaultContainer[] = "localhost";

// The variable behind reference input `input` of a running kernel, as the
// graph names it (the node's input string).
std::string RefInputName(const KernelContext& ctx, int input);
// FAILED_PRECONDITION "Attempting to use uninitialized value NAME" for
// that variable, as TensorFlow reports it.
absl::Status UninitializedValueError(const KernelContext& ctx, int input);

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::LookupOrCreate(
    std::string_view container, std::string_view name,
    const std::function<absl::StatusOr<std::shared_ptr<T>>()>& create) {
  static_assert(std::is_base_of_v<ResourceBase, T>);
  ASSIGN_OR_RETURN(std::shared_ptr<ResourceBase> base,
                   LookupOrCreateBase(container, name, T::kTypeName,
                                      [&]() -> absl::StatusOr<std::shared_ptr<ResourceBase>> {
                                        ASSIGN_OR_RETURN(std::shared_ptr<T> created, create());
                                        return std::shared_ptr<ResourceBase>(std::move(created));
                                      }));
  return std::static_pointer_cast<T>(std::move(base));
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::Lookup(std::string_view container,
                                                       std::string_view name) const {
  static_assert(std::is_base_of_v<ResourceBase, T>);
  ASSIGN_OR_RETURN(std::shared_ptr<ResourceBase> base, LookupBase(container, name, T::kTypeName));
  return std::static_pointer_cast<T>(std::move(base));
}

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_RESOURCE_MGR_H_
