// The device table's cases for the kernels built on NVIDIA's libraries:
// matrix products (cuBLAS), convolutions, pooling and softmax (cuDNN), and
// random draws (cuRAND). Every family has cases with a zero-sized
// dimension; where a sum then has no terms the result is zeros, which the
// CPU is held to.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "graph/attr_value_util.h"
#include "graph/tensor.h"
#include "tests/kernels/device/device_cases.h"
#include "tests/kernels/kernel_tester.h"

namespace rill::testing {
namespace {

// Float sums run in another order on the GPU; double ones barely differ.
double Tolerance(DataType dtype, double float_tolerance) {
  return dtype == DT_DOUBLE ? 1e-10 : float_tolerance;
}

const char* TypeName(DataType dtype) { return dtype == DT_DOUBLE ? "double" : "float"; }

// Matrix products.

// An output of `shape` whose elements are sums of no terms is zeros; else
// nothing is expected.
std::vector<Tensor> ZerosIf(bool no_terms, DataType dtype, const TensorShape& shape) {
  if (!no_terms) return {};
  return {Filled(dtype, shape, 0)};
}

void AddMatMul(std::vector<DeviceCase>& cases, const std::string& name, DataType dtype,
               const TensorShape& a, const TensorShape& b, bool transpose_a, bool transpose_b) {
  const double tol = Tolerance(dtype, 1e-4);
  cases.push_back({"MatMul_" + name + "_" + TypeName(dtype),
                   "MatMul",
                   {{"transpose_a", MakeAttr(transpose_a)}, {"transpose_b", MakeAttr(transpose_b)}},
                   {In(Random(dtype, a, 1)), In(Random(dtype, b, 2))},
                   tol,
                   tol});
  const TensorShape out({a.dim_size(transpose_a ? 1 : 0), b.dim_size(transpose_b ? 0 : 1)});
  cases.back().expected = ZerosIf(a.dim_size(transpose_a ? 0 : 1) == 0, dtype, out);
}

void AddBatchMatMul(std::vector<DeviceCase>& cases, const std::string& name, DataType dtype,
                    const TensorShape& x, const TensorShape& y, bool adj_x, bool adj_y) {
  const double tol = Tolerance(dtype, 1e-4);
  cases.push_back({"BatchMatMulV2_" + name + "_" + TypeName(dtype),
                   "BatchMatMulV2",
                   {{"adj_x", MakeAttr(adj_x)}, {"adj_y", MakeAttr(adj_y)}},
                   {In(Random(dtype, x, 3)), In(Random(dtype, y, 4))},
                   tol,
                   tol});
  const int xr = x.dims() - 2, yr = y.dims() - 2;
  const int64_t inner = x.dim_size(adj_x ? xr : xr + 1);
  if (inner != 0) return;
  // The broadcast batch dimensions, then rows and columns.
  std::vector<int64_t> dims(std::max(xr, yr), 1);
  for (int i = 0; i < xr; ++i) dims[dims.size() - xr + i] = x.dim_size(i);
  for (int i = 0; i < yr; ++i) {
    int64_t& d = dims[dims.size() - yr + i];
    if (d == 1) d = y.dim_size(i);
  }
  dims.push_back(x.dim_size(adj_x ? xr + 1 : xr));
  dims.push_back(y.dim_size(adj_y ? yr : yr + 1));
  cases.back().expected = {Filled(dtype, TensorShape(absl::MakeConstSpan(dims)), 0)};
}

void AddMatMulCases(std::vector<DeviceCase>& cases) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE}) {
    AddMatMul(cases, "1x1", t, {1, 1}, {1, 1}, false, false);
    AddMatMul(cases, "3x5_5x7", t, {3, 5}, {5, 7}, false, false);
    AddMatMul(cases, "257x33_33x65", t, {257, 33}, {33, 65}, false, false);
    AddMatMul(cases, "TransposeA", t, {5, 3}, {5, 7}, true, false);
    AddMatMul(cases, "TransposeB", t, {3, 5}, {7, 5}, false, true);
    AddMatMul(cases, "TransposeBoth", t, {33, 257}, {65, 33}, true, true);
    AddMatMul(cases, "EmptyInner", t, {3, 0}, {0, 4}, false, false);
    AddMatMul(cases, "EmptyInnerTransposeA", t, {0, 3}, {0, 4}, true, false);
    AddMatMul(cases, "EmptyInnerTransposeB", t, {3, 0}, {4, 0}, false, true);
    AddMatMul(cases, "EmptyRowsTransposeBoth", t, {5, 0}, {7, 5}, true, true);
    AddMatMul(cases, "AllEmpty", t, {0, 0}, {0, 0}, false, false);

    AddBatchMatMul(cases, "SameBatch", t, {4, 3, 5}, {4, 5, 2}, false, false);
    AddBatchMatMul(cases, "OneMatrixY", t, {2, 3, 7, 5}, {5, 4}, false, false);
    AddBatchMatMul(cases, "OneMatrixX", t, {1, 7, 5}, {3, 5, 4}, false, false);
    AddBatchMatMul(cases, "CrossBroadcast", t, {2, 1, 3, 5}, {1, 3, 5, 4}, false, false);
    AddBatchMatMul(cases, "Adjoints", t, {3, 5, 3}, {3, 4, 5}, true, true);
    AddBatchMatMul(cases, "EmptyInner", t, {2, 3, 0}, {2, 0, 4}, false, false);
    AddBatchMatMul(cases, "EmptyInnerBroadcast", t, {1, 3, 0}, {2, 0, 4}, false, false);
    AddBatchMatMul(cases, "EmptyInnerAdjoints", t, {2, 0, 3}, {4, 0}, true, true);
    AddBatchMatMul(cases, "EmptyRows", t, {2, 0, 5}, {2, 5, 3}, false, false);
    AddBatchMatMul(cases, "EmptyCols", t, {2, 3, 5}, {1, 5, 0}, false, false);
    AddBatchMatMul(cases, "EmptyBatchBroadcastsOne", t, {1, 3, 5}, {0, 5, 2}, false, false);
    AddBatchMatMul(cases, "EmptyBatchRank4", t, {0, 1, 3, 5}, {4, 5, 2}, false, false);
  }
  // The MLP's first layer.
  AddMatMul(cases, "Mlp64x784_784x128", DT_FLOAT, {64, 784}, {784, 128}, false, false);
  for (DataType t : {DT_FLOAT, DT_DOUBLE}) {
    AddMatMul(cases, "EmptyRows", t, {0, 4}, {4, 3}, false, false);
    AddMatMul(cases, "EmptyCols", t, {4, 3}, {3, 0}, false, false);
  }
  AddBatchMatMul(cases, "EmptyBatch", DT_FLOAT, {0, 3, 5}, {5, 2}, false, false);
  AddBatchMatMul(cases, "AdjointCrossBroadcast", DT_FLOAT, {3, 1, 5, 3}, {2, 4, 5}, true, true);
}

// Convolutions.

// One convolution's shapes and attrs: NHWC input, HWIO filter.
struct ConvShape {
  std::string name;
  TensorShape input;
  TensorShape filter;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  std::string padding = "SAME";
  std::vector<int64_t> explicit_paddings = {};  // EXPLICIT: before and after, height then width.
  double float_tolerance = 2e-4;
};

// The output size along one dimension, as TensorFlow computes it.
int64_t OutputSize(int64_t input, int64_t window, int64_t stride, int64_t dilation,
                   const std::string& padding, int64_t pad_before, int64_t pad_after) {
  const int64_t effective = (window - 1) * dilation + 1;
  if (padding == "SAME") return (input + stride - 1) / stride;
  return (input + pad_before + pad_after - effective + stride) / stride;
}

TensorShape ConvOutputShape(const ConvShape& c) {
  const std::vector<int64_t> pads =
      c.padding == "EXPLICIT" ? c.explicit_paddings : std::vector<int64_t>{0, 0, 0, 0};
  return TensorShape({c.input.dim_size(0),
                      OutputSize(c.input.dim_size(1), c.filter.dim_size(0), c.stride_h,
                                 c.dilation_h, c.padding, pads[0], pads[1]),
                      OutputSize(c.input.dim_size(2), c.filter.dim_size(1), c.stride_w,
                                 c.dilation_w, c.padding, pads[2], pads[3]),
                      c.filter.dim_size(3)});
}

Attrs ConvAttrs(const ConvShape& c) {
  Attrs attrs = {{"strides", MakeAttr(std::vector<int64_t>{1, c.stride_h, c.stride_w, 1})},
                 {"dilations", MakeAttr(std::vector<int64_t>{1, c.dilation_h, c.dilation_w, 1})},
                 {"padding", MakeAttr(c.padding)}};
  if (c.padding == "EXPLICIT") {
    const std::vector<int64_t>& p = c.explicit_paddings;
    attrs.push_back(
        {"explicit_paddings", MakeAttr(std::vector<int64_t>{0, 0, p[0], p[1], p[2], p[3], 0, 0})});
  }
  return attrs;
}

// Conv2D and both its gradients on the same shapes.
void AddConv(std::vector<DeviceCase>& cases, const ConvShape& c, DataType dtype) {
  const double tol = Tolerance(dtype, c.float_tolerance);
  const std::string suffix = c.name + "_" + TypeName(dtype);
  const TensorShape out = ConvOutputShape(c);
  const auto sizes = [](const TensorShape& s) {
    std::vector<int32_t> v;
    for (int64_t d : s.dim_sizes()) v.push_back(static_cast<int32_t>(d));
    return Int32s(v);
  };
  // Each output element sums over what the other two operands share:
  // none of it (zeros) when one of them is empty.
  const auto no_terms = [&](const TensorShape& a, const TensorShape& b) {
    return a.num_elements() == 0 || b.num_elements() == 0;
  };
  cases.push_back({"Conv2D_" + suffix,
                   "Conv2D",
                   ConvAttrs(c),
                   {In(Random(dtype, c.input, 5)), In(Random(dtype, c.filter, 6))},
                   tol,
                   tol});
  cases.back().expected = ZerosIf(no_terms(c.input, c.filter), dtype, out);
  cases.push_back({"Conv2DBackpropInput_" + suffix,
                   "Conv2DBackpropInput",
                   ConvAttrs(c),
                   {In(sizes(c.input)), In(Random(dtype, c.filter, 7)), In(Random(dtype, out, 8))},
                   tol,
                   tol});
  cases.back().expected = ZerosIf(no_terms(out, c.filter), dtype, c.input);
  cases.push_back({"Conv2DBackpropFilter_" + suffix,
                   "Conv2DBackpropFilter",
                   ConvAttrs(c),
                   {In(Random(dtype, c.input, 9)), In(sizes(c.filter)), In(Random(dtype, out, 10))},
                   tol,
                   tol});
  cases.back().expected = ZerosIf(no_terms(c.input, out), dtype, c.filter);
}

void AddConvCases(std::vector<DeviceCase>& cases) {
  const std::vector<ConvShape> shapes = {
      {"3x3_Stride1_Same", {2, 8, 8, 3}, {3, 3, 3, 4}},
      {"3x3_Stride1_Valid", {2, 8, 8, 3}, {3, 3, 3, 4}, 1, 1, 1, 1, "VALID"},
      // Total padding 2: one row before and one after.
      {"3x3_Stride2_Same_7x7", {2, 7, 7, 3}, {3, 3, 3, 5}, 2, 2},
      // Odd total padding: the extra row and column go after the image.
      {"3x3_Stride2_Same_8x8", {2, 8, 8, 3}, {3, 3, 3, 5}, 2, 2},
      {"4x4_Stride2_Same_7x7", {1, 7, 7, 2}, {4, 4, 2, 3}, 2, 2},
      {"2x2_Stride2_Same_7x9", {1, 7, 9, 2}, {2, 2, 2, 3}, 2, 2},
      // The last input row and column are read by no window.
      {"3x3_Stride2_Valid_8x8", {2, 8, 8, 3}, {3, 3, 3, 4}, 2, 2, 1, 1, "VALID"},
      {"3x3_Stride2x1_Same", {1, 9, 6, 2}, {3, 3, 2, 3}, 2, 1},
      {"3x3_Dilation2_Same", {1, 9, 9, 2}, {3, 3, 2, 3}, 1, 1, 2, 2},
      {"3x3_Dilation2_Valid", {1, 9, 9, 2}, {3, 3, 2, 3}, 1, 1, 2, 2, "VALID"},
      {"1x1", {2, 5, 5, 7}, {1, 1, 7, 3}},
      {"3x3_Explicit", {1, 6, 7, 2}, {3, 3, 2, 3}, 2, 1, 1, 1, "EXPLICIT", {1, 2, 0, 1}},
      {"EmptyBatch", {0, 5, 5, 2}, {3, 3, 2, 3}},
      {"EmptyBatch_Stride2_Valid", {0, 7, 7, 2}, {3, 3, 2, 3}, 2, 2, 1, 1, "VALID"},
      // No input channels: the output sums nothing. No output channels:
      // the input's gradient sums nothing.
      {"NoInputChannels", {2, 5, 5, 0}, {3, 3, 0, 4}},
      {"NoOutputChannels", {2, 5, 5, 3}, {3, 3, 3, 0}},
      {"NoChannels_Stride2_Valid", {1, 7, 6, 0}, {3, 2, 0, 0}, 2, 2, 1, 1, "VALID"},
      // An empty image, and a window larger than the image (VALID: no
      // output position).
      {"EmptyImage", {2, 0, 4, 2}, {3, 3, 2, 3}},
      {"WindowLargerThanImage_Valid", {2, 2, 2, 3}, {3, 3, 3, 4}, 1, 1, 1, 1, "VALID"},
      // The MNIST CNN's first layer; its filter gradient sums 3136 terms.
      {"MnistCnn5x5", {4, 28, 28, 1}, {5, 5, 1, 32}, 1, 1, 1, 1, "SAME", {}, 1e-3},
  };
  for (const ConvShape& c : shapes) AddConv(cases, c, DT_FLOAT);
  for (int i : {2, 3, 8, 11}) AddConv(cases, shapes[i], DT_DOUBLE);
  for (const ConvShape& c : shapes) {
    if (c.input.num_elements() == 0 || c.filter.num_elements() == 0) AddConv(cases, c, DT_DOUBLE);
  }
}

// Pooling.

struct PoolShape {
  std::string name;
  TensorShape input;
  int64_t window_h, window_w;
  int64_t stride_h, stride_w;
  std::string padding;
  std::vector<int64_t> explicit_paddings = {};  // EXPLICIT (MaxPool only).
};

Attrs PoolAttrs(const PoolShape& p) {
  Attrs attrs = {{"ksize", MakeAttr(std::vector<int64_t>{1, p.window_h, p.window_w, 1})},
                 {"strides", MakeAttr(std::vector<int64_t>{1, p.stride_h, p.stride_w, 1})},
                 {"padding", MakeAttr(p.padding)}};
  if (p.padding == "EXPLICIT") {
    const std::vector<int64_t>& e = p.explicit_paddings;
    attrs.push_back(
        {"explicit_paddings", MakeAttr(std::vector<int64_t>{0, 0, e[0], e[1], e[2], e[3], 0, 0})});
  }
  return attrs;
}

// MaxPoolGrad's orig_output: the CPU's MaxPool of orig_input.
Tensor CpuMaxPool(const PoolShape& p, const Tensor& input) {
  KernelTester t("MaxPool");
  for (const auto& [name, value] : PoolAttrs(p)) t.Attr(name, value);
  absl::StatusOr<Tensor> out = t.Input(input).RunOne();
  if (!out.ok()) {
    std::cerr << "MaxPool for the MaxPoolGrad case " << p.name << " failed: " << out.status();
    std::abort();
  }
  return *std::move(out);
}

void AddPool(std::vector<DeviceCase>& cases, const PoolShape& p, DataType dtype) {
  const std::string suffix = p.name + "_" + TypeName(dtype);
  const double tol = Tolerance(dtype, 1e-5);
  const Tensor input = Random(dtype, p.input, 11);
  cases.push_back({"MaxPool_" + suffix, "MaxPool", PoolAttrs(p), {In(input)}, tol, tol});
  const Tensor orig_output = CpuMaxPool(p, input);
  cases.push_back({"MaxPoolGrad_" + suffix,
                   "MaxPoolGrad",
                   PoolAttrs(p),
                   {In(input), In(orig_output), In(Random(dtype, orig_output.shape(), 12))},
                   tol,
                   tol});
  // No window: nothing flows back.
  cases.back().expected = ZerosIf(orig_output.NumElements() == 0, dtype, p.input);
  if (p.padding != "EXPLICIT") {
    cases.push_back({"AvgPool_" + suffix, "AvgPool", PoolAttrs(p), {In(input)}, tol, tol});
  }
}

void AddPoolCases(std::vector<DeviceCase>& cases) {
  const std::vector<PoolShape> shapes = {
      {"2x2_Stride2_Valid", {2, 8, 8, 3}, 2, 2, 2, 2, "VALID"},
      {"2x2_Stride2_Same_28x28", {2, 28, 28, 4}, 2, 2, 2, 2, "SAME"},
      // Odd sizes: the last window of each row and column overhangs by one.
      {"2x2_Stride2_Same_7x7", {2, 7, 7, 3}, 2, 2, 2, 2, "SAME"},
      {"3x3_Stride2_Same_9x9", {2, 9, 9, 2}, 3, 3, 2, 2, "SAME"},
      {"3x3_Stride2_Same_8x11", {1, 8, 11, 2}, 3, 3, 2, 2, "SAME"},
      {"3x3_Stride2_Valid_9x7", {1, 9, 7, 2}, 3, 3, 2, 2, "VALID"},
      {"3x2_Stride1x2_Same", {1, 5, 6, 33}, 3, 2, 1, 2, "SAME"},
      {"3x3_Stride1_Explicit", {1, 5, 6, 2}, 3, 3, 1, 1, "EXPLICIT", {1, 2, 0, 1}},
      {"EmptyBatch", {0, 4, 4, 2}, 2, 2, 2, 2, "SAME"},
      {"EmptyBatch_Valid", {0, 5, 5, 3}, 3, 3, 1, 1, "VALID"},
      {"NoChannels", {2, 4, 4, 0}, 2, 2, 2, 2, "SAME"},
      {"EmptyImage", {2, 0, 5, 3}, 2, 2, 2, 2, "SAME"},
      // No window fits: an empty output, and a zero gradient.
      {"WindowLargerThanImage_Valid", {2, 2, 3, 3}, 3, 3, 1, 1, "VALID"},
  };
  for (const PoolShape& p : shapes) AddPool(cases, p, DT_FLOAT);
  for (int i : {2, 4}) AddPool(cases, shapes[i], DT_DOUBLE);
  for (const PoolShape& p : shapes) {
    if (p.input.num_elements() == 0) AddPool(cases, p, DT_DOUBLE);
  }
}

// Softmax.

void AddSoftmaxCases(std::vector<DeviceCase>& cases) {
  const std::vector<std::pair<std::string, TensorShape>> shapes = {
      {"64x10", {64, 10}},    {"3x1000", {3, 1000}},    {"2x3x5", {2, 3, 5}},      {"Vector7", {7}},
      {"Empty0x10", {0, 10}}, {"NoClasses3x0", {3, 0}}, {"Empty2x0x4", {2, 0, 4}},
  };
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const auto& [name, shape] : shapes) {
      cases.push_back({std::string(op) + "_" + name + "_float",
                       op,
                       {},
                       {In(Random(DT_FLOAT, shape, 13, -5.0, 5.0))}});
    }
    cases.push_back({std::string(op) + "_64x10_double",
                     op,
                     {},
                     {In(Random(DT_DOUBLE, TensorShape({64, 10}), 14, -5.0, 5.0))},
                     1e-10,
                     1e-10});
    cases.push_back({std::string(op) + "_Empty0x10_double",
                     op,
                     {},
                     {In(Random(DT_DOUBLE, TensorShape({0, 10}), 14, -5.0, 5.0))},
                     1e-10,
                     1e-10});
  }
}

// Random draws: only the shape, dtype and range are compared.

void AddRandomCases(std::vector<DeviceCase>& cases) {
  struct Dist {
    const char* op;
    double low, high;
  };
  // A standard normal from 32-bit uniforms stays well within 10.
  const Dist dists[] = {{"RandomUniform", 0.0, 1.0},
                        {"RandomStandardNormal", -10.0, 10.0},
                        {"TruncatedNormal", -2.0, 2.0}};
  const std::vector<std::pair<std::string, std::vector<int32_t>>> shapes = {
      {"1000", {1000}}, {"3x7", {3, 7}},      {"Empty", {0}},
      {"Scalar", {}},   {"Empty3x0", {3, 0}}, {"Empty2x0x4", {2, 0, 4}}};
  for (const Dist& d : dists) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
      for (const auto& [name, shape] : shapes) {
        DeviceCase c;
        c.name = std::string(d.op) + "_" + name + "_" + TypeName(dtype);
        c.op = d.op;
        c.attrs = {{"dtype", MakeAttr(dtype)},
                   {"seed", MakeAttr(int64_t{7})},
                   {"seed2", MakeAttr(int64_t{3})}};
        c.args = {In(Int32s(shape))};
        c.random_output = true;
        c.low = d.low;
        c.high = d.high;
        cases.push_back(std::move(c));
      }
    }
    // Both seeds zero: a seed of the kernel's own.
    DeviceCase c;
    c.name = std::string(d.op) + "_Unseeded_float";
    c.op = d.op;
    c.attrs = {{"dtype", MakeAttr(DT_FLOAT)}};
    c.args = {In(Int32s({4, 25}))};
    c.random_output = true;
    c.low = d.low;
    c.high = d.high;
    cases.push_back(std::move(c));
  }
}

}  // namespace

std::vector<DeviceCase> LibraryCases() {
  std::vector<DeviceCase> cases;
  AddMatMulCases(cases);
  AddConvCases(cases);
  AddPoolCases(cases);
  AddSoftmaxCases(cases);
  AddRandomCases(cases);
  return cases;
}

}  // namespace rill::testing
