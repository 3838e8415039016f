#include <string>
#include <utility>

#include "graph/attr_value_util.h"
#include "graph/tensor_proto_util.h"
#include "tests/kernels/device/device_cases.h"

namespace rill::testing {
namespace {

DeviceCase ConstCase(std::string name, const Tensor& value) {
  const TensorProto proto = TensorToProto(value);
  return DeviceCase{.name = std::move(name),
                    .op = "Const",
                    .attrs = {{"value", MakeAttr(proto)}, {"dtype", MakeAttr(value.dtype())}},
                    .args = {}};
}

}  // namespace

std::vector<DeviceCase> StateCases() {
  Tensor flags(DT_BOOL, TensorShape({3}));
  flags.data<bool>()[0] = true;
  flags.data<bool>()[1] = false;
  flags.data<bool>()[2] = true;
  return {
      ConstCase("ConstFloat", Random(DT_FLOAT, TensorShape({3, 257}), 1)),
      ConstCase("ConstDoubleScalar", Random(DT_DOUBLE, TensorShape({}), 2)),
      ConstCase("ConstInt64", RandomInts(DT_INT64, TensorShape({5}), 3, -100, 100)),
      ConstCase("ConstInt32StaysOnTheHost", RandomInts(DT_INT32, TensorShape({4}), 4, -9, 9)),
      ConstCase("ConstBool", flags),
      ConstCase("ConstEmpty", Tensor(DT_FLOAT, TensorShape({0, 3}))),
      ConstCase("ConstEmptyDoubleMiddle", Tensor(DT_DOUBLE, TensorShape({2, 0, 4}))),
      ConstCase("ConstEmptyInt64Last", Tensor(DT_INT64, TensorShape({3, 0}))),
      ConstCase("ConstEmptyBoolVector", Tensor(DT_BOOL, TensorShape({0}))),
      ConstCase("ConstEmptyInt32StaysOnTheHost", Tensor(DT_INT32, TensorShape({0, 2}))),
  };
}

}  // namespace rill::testing
