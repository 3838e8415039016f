// KernelRegistry: which kernel computes an op on a device type for given
// attr types, and how to build it. A plain object: the standard set is built
// in kernels/registry.cc and a test may build its own.
#ifndef RILL_KERNELS_FRAMEWORK_KERNEL_REGISTRY_H_
#define RILL_KERNELS_FRAMEWORK_KERNEL_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/types.h"
#include "kernels/framework/op_kernel.h"

namespace rill {

using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(const OpKernelConstruction&)>;

// A factory for kernels whose constructor takes the construction context
// and reads nothing that can fail.
template <typename K>
absl::StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const OpKernelConstruction& c) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(c));
}

// Which nodes a kernel accepts: the op, the device type, and for some type
// attrs the allowed values. Example:
//   KernelDef("Relu").Device(kDeviceCpu).TypeConstraint<float>("T")
class KernelDef {
 public:
  explicit KernelDef(std::string op) : op_(std::move(op)) {}
  KernelDef& Device(std::string device_type) {
    device_type_ = std::move(device_type);
    return *this;
  }
  KernelDef& TypeConstraint(std::string attr, DataTypeVector allowed) {
    constraints_.emplace_back(std::move(attr), std::move(allowed));
    return *this;
  }
  KernelDef& TypeConstraint(std::string attr, DataType allowed) {
    return TypeConstraint(std::move(attr), DataTypeVector{allowed});
  }
  template <typename T>
  KernelDef& TypeConstraint(std::string attr) {
    return TypeConstraint(std::move(attr), kDataTypeOf<T>);
  }

  const std::string& op() const { return op_; }
  const std::string& device_type() const { return device_type_; }
  const std::vector<std::pair<std::string, DataTypeVector>>& constraints() const {
    return constraints_;
  }

 private:
  std::string op_;
  std::string device_type_ = kDeviceCpu;
  std::vector<std::pair<std::string, DataTypeVector>> constraints_;
};

// A KernelDef as one line of text, without its device type: the op, then
// each constrained attr with its types in registration order, e.g.
// "Cast SrcT=float DstT=half" or "AddN T=float,double".
std::string KernelDefText(const KernelDef& def);
// The inverse, on `device_type`; INVALID_ARGUMENT names the bad word.
absl::StatusOr<KernelDef> ParseKernelDefText(std::string_view text, std::string device_type);

// Thread safety: register everything first; lookups may then run
// concurrently.
class KernelRegistry {
 public:
  KernelRegistry() = default;
  KernelRegistry(const KernelRegistry&) = delete;
  KernelRegistry& operator=(const KernelRegistry&) = delete;

  void Register(KernelDef def, KernelFactory factory);

  // Builds the kernel for `node` (attrs with defaults filled) on
  // `device_type`. NOT_FOUND when no kernel matches, naming the op, the
  // device type, the node's type attrs and what is registered (the
  // executor adds the node):
  //   no CPU kernel for op 'MatMul' with T=int8; registered CPU kernels
  //   take T in {float, double}
  //   no CPU kernel for op 'SaveV2' with dtypes=[float, int64]; registered
  //   kernels: none
  // A factory error is returned as is.
  absl::StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const NodeDef& node, const OpDef& op_def,
                                                         const NodeSignature& signature,
                                                         std::string_view device_type) const;
  // Whether some kernel accepts `node` on `device_type` (the placer asks).
  bool HasKernel(const NodeDef& node, std::string_view device_type) const;
  // Device types with at least one kernel for `op`.
  std::vector<std::string> DeviceTypesFor(std::string_view op) const;
  // Every registration, by op name.
  void ForEach(const std::function<void(const KernelDef&, const KernelFactory&)>& visit) const;

 private:
  struct Entry {
    KernelDef def;
    KernelFactory factory;
  };
  const Entry* Find(const NodeDef& node, std::string_view device_type) const;
  absl::Status NoKernelError(const NodeDef& node, const OpDef& op_def,
                             std::string_view device_type) const;

  std::multimap<std::string, Entry, std::less<>> kernels_;  // By op name.
};

// Registers K<T> for `op` on `device` once per T of Ts, each under the
// constraint T = T, made by K<T>::Create when it has one (its attrs can be
// wrong) and else by MakeKernel.
template <template <typename> class K, typename... Ts>
void RegisterForTypes(KernelRegistry& registry, const std::string& device, const char* op) {
  const auto factory = []<typename T>() -> KernelFactory {
    if constexpr (requires { &K<T>::Create; }) {
      return &K<T>::Create;
    } else {
      return &MakeKernel<K<T>>;
    }
  };
  (registry.Register(KernelDef(op).Device(device).TypeConstraint<Ts>("T"),
                     factory.template operator()<Ts>()),
   ...);
}

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_KERNEL_REGISTRY_H_
