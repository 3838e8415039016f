#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "ops/registry.h"

namespace rill {
namespace {

TEST(CudaKernelDefs, EachParsesBackToItselfAndNamesTypeAttrsOfItsOp) {
  ASSERT_FALSE(CudaKernelDefs().empty());
  for (std::string_view text : CudaKernelDefs()) {
    SCOPED_TRACE(text);
    const absl::StatusOr<KernelDef> def = ParseKernelDefText(text, kDeviceGpu);
    ASSERT_TRUE(def.ok()) << def.status();
    EXPECT_EQ(KernelDefText(*def), text);
    const absl::StatusOr<const OpRegistration*> op = StandardOps().LookUp(def->op());
    ASSERT_TRUE(op.ok()) << op.status();
    for (const auto& [attr, types] : def->constraints()) {
      const auto& attrs = (*op)->op_def.attr();
      EXPECT_TRUE(std::any_of(attrs.begin(), attrs.end(), [&attr = attr](const auto& a) {
        return a.name() == attr && (a.type() == "type" || a.type() == "list(type)");
      })) << attr;
    }
  }
}

// In a CUDA build this pins the list to kernels/cuda/; without CUDA the
// list is what is registered, and the test checks that it all is.
TEST(CudaKernelDefs, AreWhatTheCudaFamiliesRegister) {
  KernelRegistry registry;
  RegisterCudaKernels(registry);
  std::vector<std::string> registered;
  registry.ForEach([&](const KernelDef& def, const KernelFactory&) {
    if (def.device_type() == kDeviceGpu) registered.push_back(KernelDefText(def));
  });
  std::vector<std::string> listed(CudaKernelDefs().begin(), CudaKernelDefs().end());
  std::sort(registered.begin(), registered.end());
  std::sort(listed.begin(), listed.end());
  std::vector<std::string> missing;
  std::vector<std::string> extra;
  std::set_difference(registered.begin(), registered.end(), listed.begin(), listed.end(),
                      std::back_inserter(missing));
  std::set_difference(listed.begin(), listed.end(), registered.begin(), registered.end(),
                      std::back_inserter(extra));
  const auto quoted = [](std::string* out, const std::string& text) {
    out->append("      \"" + text + "\",");
  };
  EXPECT_TRUE(missing.empty()) << "registered by kernels/cuda/ but not in cuda_kernel_defs.cc:\n"
                               << absl::StrJoin(missing, "\n", quoted);
  EXPECT_TRUE(extra.empty()) << "in cuda_kernel_defs.cc but not registered by kernels/cuda/:\n"
                             << absl::StrJoin(extra, "\n", quoted);
}

}  // namespace
}  // namespace rill
