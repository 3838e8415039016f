// Math ops: element-wise arithmetic and comparisons, matrix products,
// reductions, scans (Cumsum, Cumprod), buckets, casts and ranges. Names,
// args, attrs and type lists follow TensorFlow's, so GraphDefs it wrote
// validate here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/range_length.h"
#include "ops/registry.h"
#include "ops/shape_fn_util.h"

namespace rill {
namespace {

// TensorFlow's type lists, spelled out where it writes a type class inside
// braces ("{numbertype, variant}").
constexpr char kBinaryTypes[] =
    "T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, uint32, uint64, "
    "int64, complex64, complex128}";
constexpr char kMinMaxTypes[] =
    "T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, int64, "
    "uint64}";
constexpr char kUnaryTypes[] =
    "T: {bfloat16, half, float, double, int8, int16, int32, int64, complex64, complex128}";
constexpr char kFloatComplexTypes[] = "T: {bfloat16, half, float, double, complex64, complex128}";
constexpr char kFloatTypes[] = "T: {bfloat16, half, float, double}";
constexpr char kRealAndQuantizedTypes[] =
    "T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64, "
    "qint8, quint8, qint32, qint16, quint16}";
constexpr char kNumberTypesAndBool[] =
    "T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64, "
    "complex64, complex128, qint8, quint8, qint32, bool}";
constexpr char kNumberTypesAndVariant[] =
    "T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64, "
    "complex64, complex128, qint8, quint8, qint32, variant}";

// The last `n` dimensions dropped. REQUIRES: known rank >= n.
PartialTensorShape DropInnerDims(const PartialTensorShape& shape, int n) {
  return PartialTensorShape(shape.dim_sizes().subspan(0, shape.dims() - n));
}

// [rows, cols] of the product of the (adjointed) inner matrices of `a` and
// `b`, after checking that their inner dimensions agree. REQUIRES: both of
// known rank >= 2.
absl::StatusOr<std::pair<int64_t, int64_t>> ProductDims(const PartialTensorShape& a, bool adj_a,
                                                        const PartialTensorShape& b, bool adj_b) {
  const int ra = a.dims();
  const int rb = b.dims();
  const int64_t inner_a = a.dim_size(adj_a ? ra - 2 : ra - 1);
  const int64_t inner_b = b.dim_size(adj_b ? rb - 1 : rb - 2);
  if (inner_a >= 0 && inner_b >= 0 && inner_a != inner_b) {
    return ShapeError("Matrix size-incompatible: In[0]: %s, In[1]: %s: inner dimensions %d and %d "
                      "differ",
                      a.DebugString(), b.DebugString(), inner_a, inner_b);
  }
  return std::pair(a.dim_size(adj_a ? ra - 1 : ra - 2), b.dim_size(adj_b ? rb - 2 : rb - 1));
}

absl::Status MatMulShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape a, c.WithRank(c.input(0), 2, 0));
  ASSIGN_OR_RETURN(PartialTensorShape b, c.WithRank(c.input(1), 2, 1));
  ASSIGN_OR_RETURN(bool transpose_a, c.GetBoolAttr("transpose_a"));
  ASSIGN_OR_RETURN(bool transpose_b, c.GetBoolAttr("transpose_b"));
  ASSIGN_OR_RETURN(auto dims, ProductDims(a, transpose_a, b, transpose_b));
  // Rows and columns come from different inputs, so their product is checked.
  return c.SetOutputDims(0, {dims.first, dims.second});
}

// Batch dimensions broadcast (NumPy rules); the inner matrices multiply.
absl::Status BatchMatMulV2Shape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape a, c.WithRankAtLeast(c.input(0), 2, 0));
  ASSIGN_OR_RETURN(PartialTensorShape b, c.WithRankAtLeast(c.input(1), 2, 1));
  if (a.unknown_rank() || b.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(bool adj_x, c.GetBoolAttr("adj_x"));
  ASSIGN_OR_RETURN(bool adj_y, c.GetBoolAttr("adj_y"));
  ASSIGN_OR_RETURN(auto dims, ProductDims(a, adj_x, b, adj_y));
  absl::StatusOr<PartialTensorShape> batch = c.Broadcast(DropInnerDims(a, 2), DropInnerDims(b, 2));
  if (!batch.ok()) {
    return ShapeError("Batch dimensions of %s and %s do not broadcast", a.DebugString(),
                      b.DebugString());
  }
  std::vector<int64_t> out(batch->dim_sizes().begin(), batch->dim_sizes().end());
  out.push_back(dims.first);
  out.push_back(dims.second);
  return c.SetOutputDims(0, out);
}

// `input` without the dimensions in `axes` (negative axes count from the
// end), or with them set to 1 when `keep_dims`. REQUIRES: known rank.
absl::StatusOr<PartialTensorShape> ReducedShape(const PartialTensorShape& input,
                                                const std::vector<int64_t>& axes, bool keep_dims) {
  const int rank = input.dims();
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return ShapeError("Invalid reduction dimension %d for input with %d dimensions", axis, rank);
    }
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      dims.push_back(input.dim_size(i));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  return PartialTensorShape(absl::Span<const int64_t>(dims));
}

// Sum, Mean, Max, Min, Prod: axes from the known value of
// `reduction_indices`; without it only the rank can be known, and only
// with keep_dims.
absl::Status ReductionShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool keep_dims, c.GetBoolAttr("keep_dims"));
  ASSIGN_OR_RETURN(PartialTensorShape indices, c.WithRankAtMost(c.input(1), 1, 1));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, c.InputAsInt64s(1));
  const PartialTensorShape& input = c.input(0);
  const bool no_axes = indices.dims() == 1 && indices.dim_size(0) == 0;
  if (no_axes) {
    c.set_output(0, input);
  } else if (input.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
  } else if (axes.has_value()) {
    ASSIGN_OR_RETURN(PartialTensorShape out, ReducedShape(input, *axes, keep_dims));
    c.set_output(0, std::move(out));
  } else {
    c.set_output(0, keep_dims ? PartialTensorShape::UnknownOfRank(input.dims())
                              : PartialTensorShape::Unknown());
  }
  return absl::OkStatus();
}

// ArgMax, ArgMin: the `dimension` axis is dropped.
absl::Status ArgReductionShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(1), 0, 1).status());
  const PartialTensorShape& input = c.input(0);
  std::optional<std::vector<int64_t>> axis;
  // An int16 axis (which TensorFlow allows) is left unread: the kernel
  // checks it.
  if (c.input_type(1) == DT_INT32 || c.input_type(1) == DT_INT64) {
    ASSIGN_OR_RETURN(axis, c.InputAsInt64s(1));
  }
  if (input.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
  } else if (axis.has_value()) {
    ASSIGN_OR_RETURN(PartialTensorShape out, ReducedShape(input, *axis, false));
    c.set_output(0, std::move(out));
  } else {
    c.set_output(0, PartialTensorShape::UnknownOfRank(std::max(input.dims() - 1, 0)));
  }
  return absl::OkStatus();
}

// With incompatible_shape_error = false, shapes that do not broadcast give
// a scalar `false` (or `true`) at run time, so the shape is unknown.
absl::Status EqualityShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool strict, c.GetBoolAttr("incompatible_shape_error"));
  absl::StatusOr<PartialTensorShape> out = c.Broadcast(c.input(0), c.input(1));
  if (!out.ok() && !strict) out = PartialTensorShape::Unknown();
  RETURN_IF_ERROR(out.status());
  c.set_output(0, *std::move(out));
  return absl::OkStatus();
}

// `t` and `e` agree; a scalar condition picks one whole, a vector one picks
// rows, anything else picks elements and must match them.
// SelectV2 broadcasts its three inputs together, as NumPy's where.
absl::Status SelectV2Shape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const PartialTensorShape te, c.Broadcast(c.input(1), c.input(2)));
  ASSIGN_OR_RETURN(PartialTensorShape out, c.Broadcast(c.input(0), te));
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

absl::Status SelectShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape data, c.Merge(c.input(1), c.input(2)));
  const PartialTensorShape& cond = c.input(0);
  if (!cond.unknown_rank() && !data.unknown_rank() && cond.dims() > 0) {
    if (cond.dims() == 1 && data.dims() > 1) {
      const int64_t rows = data.dim_size(0);
      if (cond.dim_size(0) >= 0 && rows >= 0 && cond.dim_size(0) != rows) {
        return ShapeError("Select condition %s must have as many elements as t and e %s have rows",
                          cond.DebugString(), data.DebugString());
      }
      if (rows < 0) {
        std::vector<int64_t> dims(data.dim_sizes().begin(), data.dim_sizes().end());
        dims[0] = cond.dim_size(0);
        ASSIGN_OR_RETURN(data, PartialTensorShape::Create(dims));
      }
    } else {
      ASSIGN_OR_RETURN(data, c.Merge(data, cond));
    }
  }
  c.set_output(0, std::move(data));
  return absl::OkStatus();
}

absl::Status RangeShape(InferenceContext& c) {
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(c.WithRank(c.input(i), 0, i).status());
  const Tensor* start = c.input_tensor(0);
  const Tensor* limit = c.input_tensor(1);
  const Tensor* delta = c.input_tensor(2);
  if (start == nullptr || limit == nullptr || delta == nullptr) {
    c.set_output(0, PartialTensorShape({-1}));
    return absl::OkStatus();
  }
  const DataType dtype = start->dtype();
  if (limit->dtype() != dtype || delta->dtype() != dtype) {
    return ShapeError("Range start, limit and delta must have one type");
  }
  const auto unsupported = [&]() -> absl::StatusOr<int64_t> {
    return ShapeError("Range does not support %s", DataTypeString(dtype));
  };
  ASSIGN_OR_RETURN(
      int64_t length,
      DispatchType(
          dtype,
          [&]<typename T>() -> absl::StatusOr<int64_t> {
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
              return RangeLength(static_cast<int64_t>(start->scalar<T>()),
                                 static_cast<int64_t>(limit->scalar<T>()),
                                 static_cast<int64_t>(delta->scalar<T>()));
            } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> ||
                                 std::is_same_v<T, bfloat16>) {
              return RangeLength(static_cast<double>(start->scalar<T>()),
                                 static_cast<double>(limit->scalar<T>()),
                                 static_cast<double>(delta->scalar<T>()));
            } else {
              return unsupported();
            }
          },
          unsupported));
  c.set_output(0, PartialTensorShape({length}));
  return absl::OkStatus();
}

OpDefBuilder Binary(std::string name, std::string types) {
  return OpDefBuilder(std::move(name)).Input("x: T").Input("y: T").Output("z: T")
      .Attr(std::move(types)).SetShapeFn(shape_fn::BroadcastBinary);
}

OpDefBuilder Unary(std::string name, std::string types) {
  return OpDefBuilder(std::move(name)).Input("x: T").Output("y: T").Attr(std::move(types))
      .SetShapeFn(shape_fn::Unchanged);
}

// The gradient of y = f(x) given y and dy, which have one shape.
OpDefBuilder UnaryGrad(std::string name) {
  return OpDefBuilder(std::move(name)).Input("y: T").Input("dy: T").Output("z: T")
      .Attr(kFloatComplexTypes).SetShapeFn(shape_fn::MergeAllInputs);
}

// IsNan, IsInf, IsFinite.
OpDefBuilder FloatClass(std::string name) {
  return OpDefBuilder(std::move(name)).Input("x: T").Output("y: bool").Attr(kFloatTypes)
      .SetShapeFn(shape_fn::Unchanged);
}

OpDefBuilder Comparison(std::string name) {
  return OpDefBuilder(std::move(name)).Input("x: T").Input("y: T").Output("z: bool")
      .Attr("T: realnumbertype").SetShapeFn(shape_fn::BroadcastBinary);
}

OpDefBuilder Equality(std::string name) {
  return OpDefBuilder(std::move(name)).Input("x: T").Input("y: T").Output("z: bool")
      .Attr("T: type").Attr("incompatible_shape_error: bool = true").SetIsCommutative()
      .SetShapeFn(EqualityShape);
}

OpDefBuilder Reduction(std::string name, std::string types) {
  return OpDefBuilder(std::move(name)).Input("input: T").Input("reduction_indices: Tidx")
      .Output("output: T").Attr("keep_dims: bool = false").Attr(std::move(types))
      .Attr("Tidx: {int32, int64} = DT_INT32").SetShapeFn(ReductionShape);
}

OpDefBuilder ArgReduction(std::string name) {
  return OpDefBuilder(std::move(name)).Input("input: T").Input("dimension: Tidx")
      .Output("output: output_type").Attr(kNumberTypesAndBool)
      .Attr("Tidx: {int16, int32, int64} = DT_INT32")
      .Attr("output_type: {int16, uint16, int32, int64} = DT_INT64")
      .SetShapeFn(ArgReductionShape);
}

// Bincount(arr, size, weights) -> [size]; DenseBincount(input, size,
// weights) -> [size] for a vector input, [rows, size] for a matrix.
absl::Status BincountShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::optional<int64_t> size, shape_util::KnownScalar(c, 1, "size"));
  const int64_t bins = size.value_or(-1);
  if (bins < -1) return ShapeError("%s: size must be non-negative, got %d", c.node().op(), bins);
  const PartialTensorShape& input = c.input(0);
  if (c.node().op() == "DenseBincount" && !input.unknown_rank() && input.dims() == 2) {
    c.set_output(0, PartialTensorShape({input.dim_size(0), bins}));
  } else if (c.node().op() == "DenseBincount" && input.unknown_rank()) {
    c.set_output(0, PartialTensorShape());
  } else {
    c.set_output(0, PartialTensorShape({bins}));
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMathOps(OpRegistry& r) {
  // grad_a/grad_b (grad_x/grad_y) mark products built by gradients; recent
  // TensorFlow writes them, and they do not change the result.
  r.Add(OpDefBuilder("MatMul").Input("a: T").Input("b: T").Output("product: T")
            .Attr("transpose_a: bool = false").Attr("transpose_b: bool = false")
            .Attr("T: {bfloat16, half, float, double, int32, int64, uint8, uint16, uint32, "
                  "uint64, int8, int16, complex64, complex128}")
            .Attr("grad_a: bool = false").Attr("grad_b: bool = false")
            .SetShapeFn(MatMulShape));
  r.Add(OpDefBuilder("BatchMatMulV2").Input("x: T").Input("y: T").Output("output: T")
            .Attr("T: {bfloat16, half, float, double, int16, int32, int64, uint8, uint16, "
                  "uint32, uint64, complex64, complex128}")
            .Attr("adj_x: bool = false").Attr("adj_y: bool = false")
            .Attr("grad_x: bool = false").Attr("grad_y: bool = false")
            .SetShapeFn(BatchMatMulV2Shape));

  r.Add(Binary("Add", "T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64, "
                      "complex64, complex128, string}"));
  r.Add(Binary("AddV2", kBinaryTypes).SetIsAggregate().SetIsCommutative());
  r.Add(OpDefBuilder("AddN").Input("inputs: N * T").Output("sum: T").Attr("N: int >= 1")
            .Attr(kNumberTypesAndVariant).SetIsCommutative().SetIsAggregate()
            .SetShapeFn(shape_fn::MergeAllInputs));
  r.Add(Binary("Sub", kBinaryTypes));
  r.Add(Binary("Mul", kBinaryTypes).SetIsCommutative());
  r.Add(Binary("Div", kBinaryTypes));
  r.Add(Binary("RealDiv", kBinaryTypes));
  r.Add(Binary("FloorDiv", kBinaryTypes));
  r.Add(Binary("FloorMod", "T: {int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                           "bfloat16, half, float, double}"));
  r.Add(Binary("TruncateDiv", kBinaryTypes));
  r.Add(Binary("TruncateMod", "T: {int32, int64, bfloat16, half, float, double}"));
  r.Add(Binary("Mod", "T: {int32, int64, half, bfloat16, float, double}"));
  r.Add(Binary("SquaredDifference",
               "T: {bfloat16, half, float, double, int32, int64, complex64, complex128}")
            .SetIsCommutative());
  r.Add(Binary("Maximum", kMinMaxTypes));
  r.Add(Binary("Minimum", kMinMaxTypes));
  r.Add(Binary("Pow", "T: {bfloat16, float, half, double, int8, int16, int32, int64, complex64, "
                      "complex128}"));

  r.Add(Unary("Neg", kUnaryTypes));
  r.Add(Unary("Square", "T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, "
                        "uint16, uint32, uint64, complex64, complex128}"));
  r.Add(Unary("Sqrt", kFloatComplexTypes));
  r.Add(Unary("Rsqrt", kFloatComplexTypes));
  r.Add(Unary("Exp", kFloatComplexTypes));
  r.Add(Unary("Log", kFloatComplexTypes));
  r.Add(Unary("Abs", "T: {bfloat16, half, float, double, int8, int16, int32, int64}"));
  r.Add(Unary("Sign", kUnaryTypes));
  r.Add(Unary("Reciprocal", kUnaryTypes));
  r.Add(Unary("Inv", kUnaryTypes));
  r.Add(Unary("Floor", kFloatTypes));
  r.Add(Unary("Ceil", kFloatTypes));
  r.Add(Unary("Rint", kFloatTypes));
  r.Add(Unary("Round", kUnaryTypes));
  r.Add(FloatClass("IsNan"));
  r.Add(FloatClass("IsInf"));
  r.Add(FloatClass("IsFinite"));
  r.Add(Unary("Sigmoid", kFloatComplexTypes));
  r.Add(Unary("Tanh", kFloatComplexTypes));
  r.Add(OpDefBuilder("Bincount").Input("arr: int32").Input("size: int32").Input("weights: T")
            .Output("bins: T").Attr("T: {int32, int64, float, double}")
            .SetShapeFn(BincountShape));
  r.Add(OpDefBuilder("DenseBincount").Input("input: Tidx").Input("size: Tidx")
            .Input("weights: T").Output("output: T").Attr("Tidx: {int32, int64}")
            .Attr("T: {int32, int64, float, double}").Attr("binary_output: bool = false")
            .SetShapeFn(BincountShape));
  r.Add(Unary("Sin", kFloatComplexTypes));
  r.Add(Unary("Cos", kFloatComplexTypes));
  r.Add(UnaryGrad("SigmoidGrad"));
  r.Add(UnaryGrad("TanhGrad"));
  r.Add(UnaryGrad("SqrtGrad"));
  r.Add(UnaryGrad("RsqrtGrad"));
  r.Add(UnaryGrad("ReciprocalGrad"));
  r.Add(UnaryGrad("InvGrad"));

  r.Add(Reduction("Sum", "T: numbertype"));
  r.Add(Reduction("Mean", "T: numbertype"));
  r.Add(Reduction("Prod", "T: numbertype"));
  r.Add(Reduction("Max", kRealAndQuantizedTypes));
  r.Add(Reduction("Min", kRealAndQuantizedTypes));
  r.Add(ArgReduction("ArgMax"));
  r.Add(ArgReduction("ArgMin"));

  r.Add(Equality("Equal"));
  r.Add(Equality("NotEqual"));
  r.Add(Comparison("Less"));
  r.Add(Comparison("Greater"));
  r.Add(Comparison("LessEqual"));
  r.Add(Comparison("GreaterEqual"));
  r.Add(OpDefBuilder("LogicalAnd").Input("x: bool").Input("y: bool").Output("z: bool")
            .SetIsCommutative().SetShapeFn(shape_fn::BroadcastBinary));
  r.Add(OpDefBuilder("LogicalOr").Input("x: bool").Input("y: bool").Output("z: bool")
            .SetIsCommutative().SetShapeFn(shape_fn::BroadcastBinary));
  r.Add(OpDefBuilder("LogicalNot").Input("x: bool").Output("y: bool")
            .SetShapeFn(shape_fn::Unchanged));

  r.Add(OpDefBuilder("Cast").Input("x: SrcT").Output("y: DstT").Attr("SrcT: type")
            .Attr("DstT: type").Attr("Truncate: bool = false").SetShapeFn(shape_fn::Unchanged));
  // The bounds are scalars or have t's shape; the kernel checks which.
  r.Add(OpDefBuilder("ClipByValue").Input("t: T").Input("clip_value_min: T")
            .Input("clip_value_max: T").Output("output: T").Attr("T: numbertype")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("Select").Input("condition: bool").Input("t: T").Input("e: T")
            .Output("output: T").Attr("T: type").SetShapeFn(SelectShape));
  r.Add(OpDefBuilder("SelectV2").Input("condition: bool").Input("t: T").Input("e: T")
            .Output("output: T").Attr("T: type").SetShapeFn(SelectV2Shape));
  r.Add(Binary("DivNoNan", "T: {half, float, bfloat16, double, complex64, complex128}"));
  for (const char* scan : {"Cumsum", "Cumprod"}) {
    r.Add(OpDefBuilder(scan).Input("x: T").Input("axis: Tidx").Output("out: T")
              .Attr("exclusive: bool = false").Attr("reverse: bool = false")
              .Attr("T: numbertype").Attr("Tidx: {int32, int64} = DT_INT32")
              .SetShapeFn(shape_fn::Unchanged));
  }
  r.Add(OpDefBuilder("Bucketize").Input("input: T").Output("output: int32")
            .Attr("T: {int32, int64, float, double}").Attr("boundaries: list(float)")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("Range").Input("start: Tidx").Input("limit: Tidx").Input("delta: Tidx")
            .Output("output: Tidx")
            .Attr("Tidx: {bfloat16, half, float, double, int8, int16, int32, int64, uint16, "
                  "uint32} = DT_INT32")
            .SetShapeFn(RangeShape));
}

}  // namespace rill
