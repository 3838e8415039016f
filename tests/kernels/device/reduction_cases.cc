// Device table cases for the reductions (Sum, Mean, Prod, Max, Min,
// ArgMax, ArgMin), the softmax cross-entropy losses and BiasAddGrad: every
// GPU type, rows, columns, several reduced runs, empty and long
// reductions, and 1-sized dimensions. A reduction over nothing gives
// TensorFlow's identity of the op, which the CPU is held to.
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/attr_value_util.h"
#include "tests/kernels/device/device_cases.h"

namespace rill::testing {
namespace {

// Values a reduction of `op` keeps in range and exact enough to compare:
// products near 1 (floats) or of +-1 with a few larger factors (int64),
// which cannot overflow.
Tensor ValuesFor(const std::string& op, DataType dtype, const TensorShape& shape, int seed) {
  if (dtype != DT_INT64) {
    return op == "Prod" ? Random(dtype, shape, seed, 0.9, 1.1) : Random(dtype, shape, seed);
  }
  if (op != "Prod") return RandomInts(DT_INT64, shape, seed, -1000, 1000);
  Tensor t = RandomInts(DT_INT64, shape, seed, 0, 2);
  int64_t* v = t.data<int64_t>();
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = v[i] == 0 ? -1 : 1;
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 6 && t.NumElements() > 0; ++k) {
    v[rng() % t.NumElements()] = k % 2 == 0 ? 2 : -3;
  }
  return t;
}

// Tolerances for reducing `count` elements: summation order differs
// between devices.
void SetTolerance(DeviceCase& c, DataType dtype, int64_t count) {
  if (dtype == DT_FLOAT) {
    c.atol = count > 1000 ? 1e-3 : 1e-4;
    c.rtol = count > 1000 ? 1e-4 : 1e-5;
  } else if (dtype == DT_DOUBLE) {
    c.atol = 1e-12;
    c.rtol = 1e-12;
  } else {
    c.atol = 0;
    c.rtol = 0;
  }
}

struct Shape {
  std::string name;
  TensorShape shape;
  Tensor axes;
  bool keep_dims = false;
  int64_t count = 1;  // Elements reduced into each output, for tolerances.
};

// What TensorFlow's `op` gives for each output that reduces no element:
// 0 for Sum, 1 for Prod, NaN for a float Mean and 0 for an integer one,
// -inf and +inf for a float Max and Min, the lowest and highest integer
// for an integer one.
Tensor EmptyReduction(const std::string& op, DataType dtype, const TensorShape& shape) {
  if (op == "Sum") return Filled(dtype, shape, 0);
  if (op == "Prod") return Filled(dtype, shape, 1);
  if (dtype != DT_INT64) {
    const double inf = std::numeric_limits<double>::infinity();
    if (op == "Mean") return Filled(dtype, shape, std::numeric_limits<double>::quiet_NaN());
    return Filled(dtype, shape, op == "Max" ? -inf : inf);
  }
  Tensor t = Filled(DT_INT64, shape, 0);
  const int64_t v = op == "Max"   ? std::numeric_limits<int64_t>::lowest()
                    : op == "Min" ? std::numeric_limits<int64_t>::max()
                                  : 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<int64_t>()[i] = v;
  return t;
}

// The output shape of reducing `s`.
TensorShape ReducedShapeOf(const Shape& s) {
  const int rank = s.shape.dims();
  std::vector<bool> reduced(rank, false);
  for (int64_t i = 0; i < s.axes.NumElements(); ++i) {
    const int32_t axis = s.axes.data<int32_t>()[i];
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  TensorShape out;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      out.AddDim(s.shape.dim_size(i));
    } else if (s.keep_dims) {
      out.AddDim(1);
    }
  }
  return out;
}

std::vector<Shape> ReductionShapes() {
  return {
      {"rows", {257, 33}, Int32s({1}), false, 33},
      {"columns", {257, 33}, Int32s({0}), false, 257},
      {"middle_keep_dims", {3, 130, 5}, Int32s({1}), true, 130},
      {"negative_axes_two_runs", {4, 5, 6}, Int32s({-1, 0}), false, 24},
      {"alternating_runs", {2, 3, 4, 5, 6}, Int32s({1, 3}), true, 15},
      {"all_axes", {3, 7, 11}, Int32s({0, 1, 2}), false, 231},
      {"no_axes", {5, 4}, Int32s({}), false, 1},
      {"scalar_axis", {6, 9}, Tensor::Scalar<int32_t>(1), false, 9},
      {"only_unit_dims", {1, 5, 1, 7}, Int32s({0, 2}), false, 1},
      {"unit_dims_kept", {1, 5, 1, 7}, Int32s({1, 3}), true, 35},
      {"scalar_input", TensorShape(), Int32s({}), false, 1},
      {"batch_1", {1, 300}, Int32s({1}), false, 300},
      {"empty_reduction", {3, 0}, Int32s({1}), false, 0},
      {"empty_reduction_two_runs", {0, 3, 4}, Int32s({0, 2}), true, 0},
      {"empty_output", {0, 4}, Int32s({1}), false, 4},
      {"empty_columns", {0, 5}, Int32s({0}), false, 0},
      {"empty_middle_run", {2, 0, 3}, Int32s({1}), false, 0},
      {"empty_middle_kept", {2, 0, 3}, Int32s({0, 2}), false, 6},
      {"empty_all_axes", {4, 0, 3}, Int32s({0, 1, 2}), false, 0},
      {"empty_all_axes_keep_dims", {0, 3}, Int32s({0, 1}), true, 0},
      {"empty_no_axes", {3, 0}, Int32s({}), false, 1},
      {"empty_vector", {0}, Tensor::Scalar<int32_t>(0), false, 0},
      {"empty_alternating_runs", {2, 3, 0, 5, 6}, Int32s({1, 2, 4}), true, 0},
      {"long_rows", {3, 20000}, Int32s({1}), false, 20000},
      {"long_columns", {20000, 3}, Int32s({0}), false, 20000},
      {"long_all", {50, 50, 40}, Int32s({0, 1, 2}), false, 100000},
      {"short_rows", {5000, 3}, Int32s({-1}), false, 3},
  };
}

void AddReductions(std::vector<DeviceCase>& cases) {
  int seed = 100;
  for (const char* op : {"Sum", "Mean", "Prod", "Max", "Min"}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT64}) {
      for (const Shape& s : ReductionShapes()) {
        DeviceCase c;
        c.name = std::string(op) + "_" + DataTypeString(dtype) + "_" + s.name;
        c.op = op;
        if (s.keep_dims) c.attrs.emplace_back("keep_dims", MakeAttr(true));
        c.args = {In(ValuesFor(op, dtype, s.shape, ++seed)), In(s.axes)};
        SetTolerance(c, dtype, s.count);
        if (s.count == 0) c.expected = {EmptyReduction(op, dtype, ReducedShapeOf(s))};
        cases.push_back(std::move(c));
      }
    }
  }
}

// Values with ties, which go to the first index on every device.
Tensor Tied(DataType dtype, const TensorShape& shape, int seed) {
  const Tensor ints = RandomInts(DT_INT64, shape, seed, 0, 4);
  if (dtype == DT_INT64) return ints;
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const int64_t v = ints.data<int64_t>()[i];
    if (dtype == DT_FLOAT) {
      t.data<float>()[i] = static_cast<float>(v);
    } else {
      t.data<double>()[i] = static_cast<double>(v);
    }
  }
  return t;
}

void AddArgReductions(std::vector<DeviceCase>& cases) {
  struct ArgShape {
    std::string name;
    TensorShape shape;
    int32_t dim;
  };
  const std::vector<ArgShape> shapes = {
      {"rows", {257, 33}, 1},     {"columns", {257, 33}, 0},
      {"middle", {3, 40, 5}, 1},  {"negative_dim", {3, 4, 5}, -1},
      {"batch_1", {1, 1000}, 1},  {"unit_axis", {5, 1}, 1},
      {"vector", {4099}, 0},      {"empty_output", {0, 3}, 1},
      {"empty_inner", {3, 0}, 0}, {"empty_outer_3d", {0, 4, 2}, 1},
  };
  int seed = 500;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT64}) {
      for (const ArgShape& s : shapes) {
        for (bool tied : {false, true}) {
          DeviceCase c;
          c.name =
              std::string(op) + "_" + DataTypeString(dtype) + "_" + s.name + (tied ? "_ties" : "");
          c.op = op;
          c.attrs = {{"output_type", MakeAttr(DT_INT64)}};
          const Tensor x =
              tied ? Tied(dtype, s.shape, ++seed) : ValuesFor(op, dtype, s.shape, ++seed);
          c.args = {In(x), In(Tensor::Scalar<int32_t>(s.dim))};
          cases.push_back(std::move(c));
        }
      }
    }
  }
}

// [rows, classes] label distributions: each row sums to 1.
Tensor Distributions(DataType dtype, const TensorShape& shape, int seed) {
  Tensor t = Random(dtype, shape, seed, 0.0, 1.0);
  const int64_t rows = shape.dim_size(0);
  const int64_t classes = shape.dim_size(1);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) {
      sum +=
          dtype == DT_FLOAT ? t.data<float>()[r * classes + c] : t.data<double>()[r * classes + c];
    }
    for (int64_t c = 0; c < classes; ++c) {
      if (dtype == DT_FLOAT) {
        t.data<float>()[r * classes + c] /= static_cast<float>(sum);
      } else {
        t.data<double>()[r * classes + c] /= sum;
      }
    }
  }
  return t;
}

void AddSoftmaxLosses(std::vector<DeviceCase>& cases) {
  const std::vector<std::pair<std::string, TensorShape>> shapes = {
      {"batch_1", {1, 10}},      {"odd", {3, 7}},       {"batch_257", {257, 33}},
      {"long_rows", {4, 10000}}, {"one_class", {5, 1}}, {"empty_batch", {0, 5}},
  };
  // With no class a row's loss sums nothing: 0, as in TensorFlow. (The
  // sparse loss has no label to name then; both devices reject it.)
  const TensorShape no_classes({3, 0});
  int seed = 900;
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
    const double tol = dtype == DT_FLOAT ? 1e-5 : 1e-12;
    for (const auto& [name, shape] : shapes) {
      DeviceCase c;
      c.name = "SoftmaxCrossEntropyWithLogits_" + DataTypeString(dtype) + "_" + name;
      c.op = "SoftmaxCrossEntropyWithLogits";
      c.args = {In(Random(dtype, shape, ++seed, -5.0, 5.0)),
                In(Distributions(dtype, shape, ++seed))};
      c.atol = tol;
      c.rtol = dtype == DT_FLOAT ? 1e-4 : 1e-12;
      cases.push_back(std::move(c));
      for (DataType labels : {DT_INT32, DT_INT64}) {
        DeviceCase s;
        s.name = "SparseSoftmaxCrossEntropyWithLogits_" + DataTypeString(dtype) + "_" +
                 DataTypeString(labels) + "_" + name;
        s.op = "SparseSoftmaxCrossEntropyWithLogits";
        // Labels in range only: out of range the CPU fails and the GPU
        // gives NaN.
        s.args = {
            In(Random(dtype, shape, ++seed, -5.0, 5.0)),
            In(RandomInts(labels, TensorShape({shape.dim_size(0)}), ++seed, 0, shape.dim_size(1)))};
        s.atol = tol;
        s.rtol = dtype == DT_FLOAT ? 1e-4 : 1e-12;
        cases.push_back(std::move(s));
      }
    }
    DeviceCase c;
    c.name = "SoftmaxCrossEntropyWithLogits_" + DataTypeString(dtype) + "_no_classes";
    c.op = "SoftmaxCrossEntropyWithLogits";
    c.args = {In(Random(dtype, no_classes, ++seed)), In(Random(dtype, no_classes, ++seed))};
    c.expected = {Filled(dtype, TensorShape({3}), 0), Filled(dtype, no_classes, 0)};
    cases.push_back(std::move(c));
  }
}

void AddBiasAddGrad(std::vector<DeviceCase>& cases) {
  struct BiasShape {
    std::string name;
    TensorShape shape;
    const char* format;
  };
  const std::vector<BiasShape> shapes = {
      {"nhwc", {2, 3, 4, 5}, "NHWC"},
      {"nchw", {2, 3, 4, 5}, "NCHW"},
      {"nhwc_matrix", {257, 33}, "NHWC"},
      {"nchw_3d", {3, 4, 7}, "NCHW"},
      {"nhwc_unit_dims", {1, 1, 1, 6}, "NHWC"},
      {"nchw_unit_image", {3, 6, 1, 1}, "NCHW"},
      {"nchw_batch_1", {1, 8, 5, 5}, "NCHW"},
      {"nhwc_empty_batch", {0, 4}, "NHWC"},
      {"nhwc_long", {20000, 3}, "NHWC"},
      {"nchw_long_image", {2, 3, 100, 100}, "NCHW"},
      // A sum of nothing per channel (0), and no channels at all.
      {"nchw_empty_batch", {0, 3, 4, 5}, "NCHW"},
      {"nchw_empty_image", {2, 3, 0, 4}, "NCHW"},
      {"nhwc_empty_image", {2, 0, 3, 4}, "NHWC"},
      {"nhwc_no_channels", {5, 0}, "NHWC"},
      {"nchw_no_channels", {2, 0, 3, 3}, "NCHW"},
  };
  int seed = 1300;
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT64}) {
    for (const BiasShape& s : shapes) {
      DeviceCase c;
      c.name = "BiasAddGrad_" + DataTypeString(dtype) + "_" + s.name;
      c.op = "BiasAddGrad";
      c.attrs = {{"data_format", MakeAttr(s.format)}};
      c.args = {In(ValuesFor("Sum", dtype, s.shape, ++seed))};
      SetTolerance(c, dtype, s.shape.num_elements());
      if (s.shape.num_elements() == 0) {
        const int channel = std::string(s.format) == "NCHW" ? 1 : s.shape.dims() - 1;
        c.expected = {Filled(dtype, TensorShape({s.shape.dim_size(channel)}), 0)};
      }
      cases.push_back(std::move(c));
    }
  }
}

}  // namespace

std::vector<DeviceCase> ReductionCases() {
  std::vector<DeviceCase> cases;
  AddReductions(cases);
  AddArgReductions(cases);
  AddSoftmaxLosses(cases);
  AddBiasAddGrad(cases);
  return cases;
}

}  // namespace rill::testing
