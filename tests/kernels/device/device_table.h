// The device kernel table: each case runs one op on the CPU and on every
// GPU of the process and compares the outputs, op by op, within the case's
// tolerance. Without a GPU the CPU half still runs (and is checked against
// the case's expected outputs, where it has them) and the rest skips.
#ifndef RILL_TESTS_KERNELS_DEVICE_DEVICE_TABLE_H_
#define RILL_TESTS_KERNELS_DEVICE_DEVICE_TABLE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "graph/proto/attr_value.pb.h"
#include "graph/tensor.h"

namespace rill::testing {

// One input argument: a tensor, a list (N * T, list(type)), or a variable
// (Ref(T) inputs) whose value after the run is compared too.
struct CaseArg {
  std::vector<Tensor> values;
  bool is_list = false;
  bool is_ref = false;
};
CaseArg In(Tensor value);
CaseArg List(std::vector<Tensor> values);
CaseArg Ref(Tensor initial);

using Attrs = std::vector<std::pair<std::string, AttrValue>>;

struct DeviceCase {
  std::string name;  // Unique in the table; letters, digits and '_'.
  std::string op;
  Attrs attrs;
  std::vector<CaseArg> args;
  double atol = 1e-5;
  double rtol = 1e-5;
  // Outputs that are random draws: only their shape, dtype and the range
  // [low, high] of their values are compared.
  bool random_output = false;
  double low = 0, high = 0;
  // TensorFlow's outputs, where a case pins them (empty inputs, whose
  // results are identities and zeros): the CPU's outputs must match them
  // within the tolerance, in order. Empty: only the devices are compared.
  std::vector<Tensor> expected = {};
};

// Random values of `dtype` in [low, high), never exactly zero (a zero
// hides a kernel that skips an element); a seed per input keeps cases
// reproducible.
Tensor Random(DataType dtype, const TensorShape& shape, int seed, double low = -1.0,
              double high = 1.0);
// Random int32 or int64 values in [low, high).
Tensor RandomInts(DataType dtype, const TensorShape& shape, int seed, int64_t low, int64_t high);

// An int32 vector (shapes, axes, perms: host-memory arguments on a GPU).
Tensor Int32s(std::vector<int32_t> values);
// A scalar of `dtype` (float, double, half, int64; else bool) holding `v`
// (true for v != 0).
Tensor ScalarOf(DataType dtype, double v);

// A tensor of `dtype` (float, double, half, int32, int64 or bool) and
// `shape` with every element `v`.
Tensor Filled(DataType dtype, const TensorShape& shape, double v);

// Runs `c` on the CPU (which must succeed and give c.expected, if any),
// then on each GPU, and expects the same outputs. GTEST_SKIP, saying why,
// when the process has no GPU.
void RunOnEveryDevice(const DeviceCase& c);

// The op names of the cases, for the check that every GPU kernel has one.
std::vector<std::string> OpsOf(const std::vector<DeviceCase>& cases);

inline std::ostream& operator<<(std::ostream& os, const DeviceCase& c) { return os << c.name; }

}  // namespace rill::testing

#endif  // RILL_TESTS_KERNELS_DEVICE_DEVICE_TABLE_H_
