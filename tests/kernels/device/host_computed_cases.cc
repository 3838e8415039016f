#include <string>
#include <utility>
#include <vector>

#include "graph/attr_value_util.h"
#include "tests/kernels/device/device_cases.h"

namespace rill::testing {
namespace {

Tensor Int64s(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<int64_t>(values, TensorShape({n}));
}

void AddWhereCases(std::vector<DeviceCase>& cases) {
  // Values in {-1, 0, 1}: zeros are what Where skips.
  const std::vector<std::pair<std::string, TensorShape>> shapes = {
      {"Vector", TensorShape({9})},
      {"2x5", TensorShape({2, 5})},
      {"Empty0x3", TensorShape({0, 3})}};
  int seed = 200;
  for (const auto& [name, shape] : shapes) {
    Tensor ints = RandomInts(DT_INT64, shape, seed++, -1, 2);
    cases.push_back({.name = "Where_" + name + "_int64",
                     .op = "Where",
                     .attrs = {{"T", MakeAttr(DT_INT64)}},
                     .args = {In(ints)}});
    Tensor floats(DT_FLOAT, shape);
    Tensor flags(DT_BOOL, shape);
    for (int64_t i = 0; i < shape.num_elements(); ++i) {
      floats.data<float>()[i] = static_cast<float>(ints.data<int64_t>()[i]) * 0.5f;
      flags.data<bool>()[i] = ints.data<int64_t>()[i] != 0;
    }
    cases.push_back({.name = "Where_" + name + "_float",
                     .op = "Where",
                     .attrs = {{"T", MakeAttr(DT_FLOAT)}},
                     .args = {In(floats)}});
    cases.push_back({.name = "Where_" + name + "_bool",
                     .op = "Where",
                     .attrs = {{"T", MakeAttr(DT_BOOL)}},
                     .args = {In(flags)}});
  }
}

Tensor Values(DataType dtype, const TensorShape& shape, int seed) {
  return dtype == DT_INT32 ? RandomInts(dtype, shape, seed, -100, 100) : Random(dtype, shape, seed);
}

void AddDynamicStitchCases(std::vector<DeviceCase>& cases) {
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32}) {
    const std::string type = DataTypeString(dtype);
    // Rows of 3, the second list overwriting index 1 of the first.
    cases.push_back({.name = "DynamicStitch_Rows_" + type,
                     .op = "DynamicStitch",
                     .attrs = {{"N", MakeAttr(int64_t{2})}, {"T", MakeAttr(dtype)}},
                     .args = {List({Int32s({0, 1, 3}), Int32s({1, 2})}),
                              List({Values(dtype, TensorShape({3, 3}), 210),
                                    Values(dtype, TensorShape({2, 3}), 211)})}});
    cases.push_back({.name = "DynamicStitch_Empty_" + type,
                     .op = "DynamicStitch",
                     .attrs = {{"N", MakeAttr(int64_t{1})}, {"T", MakeAttr(dtype)}},
                     .args = {List({Int32s({})}), List({Tensor(dtype, TensorShape({0, 4}))})},
                     .expected = {Tensor(dtype, TensorShape({0, 4}))}});
  }
}

void AddOnceAGraphCases(std::vector<DeviceCase>& cases) {
  cases.push_back({.name = "IsVariableInitialized_Initialized",
                   .op = "IsVariableInitialized",
                   .attrs = {{"dtype", MakeAttr(DT_FLOAT)}},
                   .args = {Ref(Random(DT_FLOAT, TensorShape({4}), 220))}});
  // The random ops with shapes as int64 and in the half types.
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    for (DataType dtype : {DT_FLOAT, DT_HALF, DT_BFLOAT16}) {
      for (const auto& [name, shape] : std::vector<std::pair<std::string, Tensor>>{
               {"Int64Shape", Int64s({3, 7})}, {"Int64Empty", Int64s({0, 2})}}) {
        cases.push_back({.name = std::string(op) + "_" + name + "_" + DataTypeString(dtype),
                         .op = op,
                         .attrs = {{"dtype", MakeAttr(dtype)},
                                   {"seed", MakeAttr(int64_t{7})},
                                   {"seed2", MakeAttr(int64_t{3})}},
                         .args = {In(shape)},
                         .random_output = true,
                         .low = -10.0,
                         .high = 10.0});
      }
    }
  }
  cases.push_back({.name = "Fill_Int64Dims_float",
                   .op = "Fill",
                   .attrs = {{"T", MakeAttr(DT_FLOAT)}, {"index_type", MakeAttr(DT_INT64)}},
                   .args = {In(Int64s({2, 3})), In(ScalarOf(DT_FLOAT, 1.5))}});
  cases.push_back({.name = "Fill_Int64DimsEmpty_float",
                   .op = "Fill",
                   .attrs = {{"T", MakeAttr(DT_FLOAT)}, {"index_type", MakeAttr(DT_INT64)}},
                   .args = {In(Int64s({0, 3})), In(ScalarOf(DT_FLOAT, 1.5))},
                   .expected = {Tensor(DT_FLOAT, TensorShape({0, 3}))}});
}

// What a step computes from int32 shapes and labels: counts cast to the
// gradient's type, predictions compared with labels.
void AddHostInputCases(std::vector<DeviceCase>& cases) {
  cases.push_back({.name = "Cast_int32_to_float",
                   .op = "Cast",
                   .attrs = {{"SrcT", MakeAttr(DT_INT32)}, {"DstT", MakeAttr(DT_FLOAT)}},
                   .args = {In(RandomInts(DT_INT32, TensorShape({5}), 230, -50, 50))}});
  cases.push_back({.name = "Cast_int32_to_double_Empty",
                   .op = "Cast",
                   .attrs = {{"SrcT", MakeAttr(DT_INT32)}, {"DstT", MakeAttr(DT_DOUBLE)}},
                   .args = {In(Tensor(DT_INT32, TensorShape({0})))}});
  cases.push_back({.name = "Equal_int32",
                   .op = "Equal",
                   .attrs = {{"T", MakeAttr(DT_INT32)}},
                   .args = {In(RandomInts(DT_INT32, TensorShape({64}), 231, 0, 3)),
                            In(RandomInts(DT_INT32, TensorShape({64}), 232, 0, 3))}});
  cases.push_back(
      {.name = "ArgMax_float_to_int32",
       .op = "ArgMax",
       .attrs = {{"T", MakeAttr(DT_FLOAT)},
                 {"Tidx", MakeAttr(DT_INT32)},
                 {"output_type", MakeAttr(DT_INT32)}},
       .args = {In(Random(DT_FLOAT, TensorShape({8, 10}), 233)), In(Tensor::Scalar<int32_t>(1))}});
}

}  // namespace

std::vector<DeviceCase> HostComputedCases() {
  std::vector<DeviceCase> cases;
  AddWhereCases(cases);
  AddDynamicStitchCases(cases);
  AddOnceAGraphCases(cases);
  AddHostInputCases(cases);
  return cases;
}

}  // namespace rill::testing
