// The cases of the device kernel table, one function per kernel family,
// each in its own file (device_table.h says what a case is).
#ifndef RILL_TESTS_KERNELS_DEVICE_DEVICE_CASES_H_
#define RILL_TESTS_KERNELS_DEVICE_DEVICE_CASES_H_

#include <vector>

#include "tests/kernels/device/device_table.h"

namespace rill::testing {

std::vector<DeviceCase> StateCases();      // state_cases.cc: Const
std::vector<DeviceCase> CwiseCases();      // cwise_cases.cc: element-wise, Apply*
std::vector<DeviceCase> ReductionCases();  // reduction_cases.cc: reductions, softmax losses
std::vector<DeviceCase> TransformCases();  // transform_cases.cc: shapes and data movement
std::vector<DeviceCase> LibraryCases();    // library_cases.cc: cuBLAS, cuDNN, cuRAND
// host_computed_cases.cc: Where, DynamicStitch, the other kernels computed
// on the host.
std::vector<DeviceCase> HostComputedCases();

}  // namespace rill::testing

#endif  // RILL_TESTS_KERNELS_DEVICE_DEVICE_CASES_H_
