// The device kernel table, one parameterized suite per kernel family, and
// the check that every GPU kernel has a case.
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "kernels/host_kernels.h"
#include "kernels/registry.h"
#include "tests/kernels/device/device_cases.h"
#include "tests/kernels/device/device_table.h"

namespace rill::testing {
namespace {

class DeviceKernels : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(DeviceKernels, SameOnEveryDevice) { RunOnEveryDevice(GetParam()); }

std::string CaseName(const ::testing::TestParamInfo<DeviceCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(State, DeviceKernels, ::testing::ValuesIn(StateCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Cwise, DeviceKernels, ::testing::ValuesIn(CwiseCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Reduction, DeviceKernels, ::testing::ValuesIn(ReductionCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Transform, DeviceKernels, ::testing::ValuesIn(TransformCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Library, DeviceKernels, ::testing::ValuesIn(LibraryCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(HostComputed, DeviceKernels, ::testing::ValuesIn(HostComputedCases()),
                         CaseName);

// Registrations per op, GPU kernels only.
std::map<std::string, int> GpuRegistrations(const KernelRegistry& registry) {
  std::map<std::string, int> count;
  registry.ForEach([&](const KernelDef& def, const KernelFactory&) {
    if (def.device_type() == kDeviceGpu) ++count[def.op()];
  });
  return count;
}

TEST(DeviceKernelTable, EveryGpuKernelHasACase) {
  // What RegisterHostKernels reuses from the CPU needs no case of its own,
  // nor what the CPU's files register for the GPU too, which never compute
  // on elements (_Send and _Recv: sendrecv_test; the variables:
  // tests/runtime/gpu_session_test), nor VarIsInitializedOp, whose resource
  // handle no case can hold (host_computed_kernels_test).
  KernelRegistry host_only;
  RegisterCpuKernels(host_only);
  RegisterHostKernels(host_only, kDeviceGpu);
  const std::map<std::string, int> host = GpuRegistrations(host_only);
  std::set<std::string> covered = {"VarIsInitializedOp"};
  for (const auto& cases : {StateCases(), CwiseCases(), ReductionCases(), TransformCases(),
                            LibraryCases(), HostComputedCases()}) {
    for (const std::string& op : OpsOf(cases)) covered.insert(op);
  }
  for (const auto& [op, count] : GpuRegistrations(StandardKernels())) {
    const auto in_host = host.find(op);
    if (in_host != host.end() && in_host->second == count) continue;
    EXPECT_TRUE(covered.contains(op)) << op << " has a GPU kernel but no case in the table";
  }
}

}  // namespace
}  // namespace rill::testing
