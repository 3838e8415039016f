// ResourceMgr: per-device state that outlives a step (variables, and later
// queues and accumulators), found by (container, name).
#ifndef RILL_KERNELS_RESOURCE_MGR_H_
#define RILL_KERNELS_RESOURCE_MGR_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"

namespace rill {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
};

// A variable's storage: the tensor (uninitialized until first assigned) and
// the mutex that guards it. Ref-style ops hand out &tensor and &mu.
class Var : public ResourceBase {
 public:
  explicit Var(DataType dtype) : dtype_(dtype) {}
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
  // absent. FAILED_PRECONDITION when it exists with another type.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupOrCreate(
      std::string_view container, std::string_view name,
      const std::function<absl::StatusOr<std::shared_ptr<T>>()>& create);

  // NOT_FOUND names the container and resource when absent.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Lookup(std::string_view container,
                                           std::string_view name) const;

  absl::Status Delete(std::string_view container, std::string_view name);
  // Drops every resource of `container`.
  void Cleanup(std::string_view container);
  // Drops everything.
  void Clear();

 private:
  absl::StatusOr<std::shared_ptr<ResourceBase>> LookupOrCreateBase(
      std::string_view container, std::string_view name, const char* type_name,
      const std::function<absl::StatusOr<std::shared_ptr<ResourceBase>>()>& create);
  absl::StatusOr<std::shared_ptr<ResourceBase>> LookupBase(std::string_view container,
                                                          std::string_view name) const;

  mutable absl::Mutex mu_;
  // (container, name) -> (type name, resource).
  absl::flat_hash_map<std::pair<std::string, std::string>,
                      std::pair<const char*, std::shared_ptr<ResourceBase>>>
      resources_ ABSL_GUARDED_BY(mu_);
};

// The container a resource lives in when its node's `container` attr is
// empty.
inline constexpr char kDefaultContainer[] = "localhost";

}  // namespace rill

#endif  // RILL_KERNELS_RESOURCE_MGR_H_
