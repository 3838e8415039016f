// Gradients of the math ops, after TensorFlow's math_grad.py: element-wise
// arithmetic (summed back over broadcast dimensions), clipping, matrix
// products, reductions, casts and selections.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::Out;
using grad::Scalar;
using Outputs = std::vector<Output>;

// gx and gy summed over the dimensions along which x and y were broadcast,
// and reshaped to x's and y's shapes.
void ReduceForBroadcast(const Scope& s, const Operation& op, const Output& gx, const Output& gy,
                        Outputs* dx) {
  const Output x = In(op, 0);
  const Output y = In(op, 1);
  if (x.shape().IsFullyDefined() && x.shape() == y.shape()) {
    *dx = {gx, gy};
    return;
  }
  const Output sx = ops::Shape(s, x);
  const Output sy = ops::Shape(s, y);
  const ops::BroadcastGradientArgs r(s, sx, sy);
  *dx = {ops::Reshape(s, ops::Sum(s, gx, r.r0), sx), ops::Reshape(s, ops::Sum(s, gy, r.r1), sy)};
}

absl::Status AddGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ReduceForBroadcast(s, op, dy[0], dy[0], dx);
  return absl::OkStatus();
}

absl::Status SubGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ReduceForBroadcast(s, op, dy[0], ops::Neg(s, dy[0]), dx);
  return absl::OkStatus();
}

absl::Status MulGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ReduceForBroadcast(s, op, ops::Mul(s, dy[0], In(op, 1)), ops::Mul(s, In(op, 0), dy[0]), dx);
  return absl::OkStatus();
}

// Div and RealDiv: d(x/y) = dx/y - x dy/y^2, divided with the op itself.
template <typename DivOp>
absl::Status DivGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const Output y = In(op, 1);
  ReduceForBroadcast(s, op, DivOp(s, dy[0], y),
                     ops::Mul(s, dy[0], DivOp(s, DivOp(s, ops::Neg(s, x), y), y)), dx);
  return absl::OkStatus();
}

absl::Status FloorModGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output q = ops::FloorDiv(s, In(op, 0), In(op, 1));
  ReduceForBroadcast(s, op, dy[0], ops::Mul(s, dy[0], ops::Neg(s, q)), dx);
  return absl::OkStatus();
}

// Maximum and Minimum: the gradient goes to x where x wins or ties (x >= y
// for Maximum, x <= y for Minimum) and to y elsewhere, as in TensorFlow.
template <bool kMinimum>
absl::Status MinMaxGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const Output y = In(op, 1);
  const Output x_wins =
      kMinimum ? Output(ops::LessEqual(s, x, y)) : Output(ops::GreaterEqual(s, x, y));
  const Output zeros = ops::ZerosLike(s, dy[0]);
  ReduceForBroadcast(s, op, ops::Select(s, x_wins, dy[0], zeros),
                     ops::Select(s, x_wins, zeros, dy[0]), dx);
  return absl::OkStatus();
}

// d(x^y) = y x^(y-1) dx + x^y log(x) dy. Where x <= 0 no real log(x) makes
// sense and it is taken as 0; it is computed there from 1 instead of x, so
// that a second derivative does not meet log(0) or log(-1) (TensorFlow's
// safe_x).
absl::Status PowGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const Output y = In(op, 1);
  const Output z = Out(op, 0);
  const DataType t = BaseType(x.type());
  const Output gx =
      ops::Mul(s, dy[0], ops::Mul(s, y, ops::Pow(s, x, ops::Sub(s, y, Scalar(s, 1, t)))));
  const Output positive = ops::Greater(s, x, Scalar(s, 0, t));
  const Output safe_x = ops::Select(s, positive, x, ops::OnesLike(s, x));
  const Output log_x = ops::Select(s, positive, ops::Log(s, safe_x), ops::ZerosLike(s, x));
  ReduceForBroadcast(s, op, gx, ops::Mul(s, dy[0], ops::Mul(s, z, log_x)), dx);
  return absl::OkStatus();
}

// d(x - y)^2 = 2 (x - y) (dx - dy).
absl::Status SquaredDifferenceGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                   Outputs* dx) {
  const Output x = In(op, 0);
  const Output y = In(op, 1);
  const Output two_g = ops::Mul(s, Scalar(s, 2, BaseType(x.type())), dy[0]);
  const Output gx = ops::Mul(s, two_g, ops::Sub(s, x, y));
  ReduceForBroadcast(s, op, gx, ops::Neg(s, gx), dx);
  return absl::OkStatus();
}

// `g`, shaped like `t`, summed back to the shape of `bound`, which is t's
// or a scalar's.
Output ReduceToBound(const Scope& s, const Output& g, const Output& t, const Output& bound) {
  if (t.shape().IsFullyDefined() && t.shape() == bound.shape()) return g;
  const Output shape = ops::Shape(s, bound);
  const ops::BroadcastGradientArgs r(s, ops::Shape(s, t), shape);
  return ops::Reshape(s, ops::Sum(s, g, r.r1), shape);
}

// The gradient passes to t where it lies within [min, max] and to the
// bound that clipped it elsewhere (TensorFlow's clip_ops.py).
absl::Status ClipByValueGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output t = In(op, 0);
  const Output lo = In(op, 1);
  const Output hi = In(op, 2);
  const Output zeros = ops::ZerosLike(s, dy[0]);
  const Output below = ops::Less(s, t, lo);
  const Output above = ops::Greater(s, t, hi);
  const Output gt = ops::Select(s, below, zeros, ops::Select(s, above, zeros, dy[0]));
  *dx = {gt, ReduceToBound(s, ops::Select(s, below, dy[0], zeros), t, lo),
         ReduceToBound(s, ops::Select(s, above, dy[0], zeros), t, hi)};
  return absl::OkStatus();
}

absl::Status NegGrad(const Scope& s, const Operation&, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Neg(s, dy[0])};
  return absl::OkStatus();
}

absl::Status SquareGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  *dx = {ops::Mul(s, dy[0], ops::Mul(s, Scalar(s, 2, BaseType(x.type())), x))};
  return absl::OkStatus();
}

absl::Status SqrtGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::SqrtGrad(s, Out(op, 0), dy[0])};
  return absl::OkStatus();
}

absl::Status RsqrtGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::RsqrtGrad(s, Out(op, 0), dy[0])};
  return absl::OkStatus();
}

// Reciprocal and Inv.
absl::Status ReciprocalGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::ReciprocalGrad(s, Out(op, 0), dy[0])};
  return absl::OkStatus();
}

// SqrtGrad(a, b) = z = b / (2 a): dz = -z da / a + db / (2 a).
absl::Status SqrtGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output a = In(op, 0);
  const Output g_over_a = ops::Div(s, dy[0], a);
  *dx = {ops::Mul(s, ops::Neg(s, g_over_a), Out(op, 0)),
         ops::Mul(s, Scalar(s, 0.5, BaseType(a.type())), g_over_a)};
  return absl::OkStatus();
}

// RsqrtGrad(a, b) = -b a^3 / 2.
absl::Status RsqrtGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output a = In(op, 0);
  const Output b = In(op, 1);
  const Output minus_three_halves = Scalar(s, -1.5, BaseType(a.type()));
  *dx = {ops::Mul(s, ops::Mul(s, ops::Mul(s, minus_three_halves, dy[0]), b), ops::Square(s, a)),
         ops::RsqrtGrad(s, a, dy[0])};
  return absl::OkStatus();
}

// ReciprocalGrad(a, b) = -b a^2 (and InvGrad).
absl::Status ReciprocalGradGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                Outputs* dx) {
  const Output a = In(op, 0);
  const Output minus_two = Scalar(s, -2, BaseType(a.type()));
  *dx = {ops::Mul(s, ops::Mul(s, ops::Mul(s, dy[0], minus_two), In(op, 1)), a),
         ops::ReciprocalGrad(s, a, dy[0])};
  return absl::OkStatus();
}

absl::Status ExpGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Mul(s, dy[0], Out(op, 0))};
  return absl::OkStatus();
}

absl::Status LogGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Div(s, dy[0], In(op, 0))};
  return absl::OkStatus();
}

absl::Status AbsGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Mul(s, dy[0], ops::Sign(s, In(op, 0)))};
  return absl::OkStatus();
}

// Sign is flat almost everywhere.
absl::Status SignGrad(const Scope& s, const Operation& op, const Outputs&, Outputs* dx) {
  *dx = {ops::ZerosLike(s, In(op, 0))};
  return absl::OkStatus();
}

absl::Status SigmoidGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::SigmoidGrad(s, Out(op, 0), dy[0])};
  return absl::OkStatus();
}

// d sin(x) = cos(x) dx; d cos(x) = -sin(x) dx.
absl::Status SinGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Mul(s, dy[0], ops::Cos(s, In(op, 0)))};
  return absl::OkStatus();
}

absl::Status CosGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Neg(s, ops::Mul(s, dy[0], ops::Sin(s, In(op, 0))))};
  return absl::OkStatus();
}

absl::Status TanhGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::TanhGrad(s, Out(op, 0), dy[0])};
  return absl::OkStatus();
}

// SigmoidGrad(y, g) = g y (1 - y).
absl::Status SigmoidGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output y = In(op, 0);
  const Output gb = ops::Mul(s, dy[0], In(op, 1));
  const Output two_gby = ops::Mul(s, ops::Mul(s, Scalar(s, 2, BaseType(y.type())), gb), y);
  *dx = {ops::Sub(s, gb, two_gby), ops::SigmoidGrad(s, y, dy[0])};
  return absl::OkStatus();
}

// TanhGrad(y, g) = g (1 - y^2).
absl::Status TanhGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output y = In(op, 0);
  const Output minus_two = Scalar(s, -2, BaseType(y.type()));
  *dx = {ops::Mul(s, ops::Mul(s, dy[0], minus_two), ops::Mul(s, In(op, 1), y)),
         ops::TanhGrad(s, y, dy[0])};
  return absl::OkStatus();
}

// The gradients of a product of `a` (transposed when `ta`) and `b`
// (transposed when `tb`), as two further products; `mul(p, q, tp, tq,
// is_grad_of_a)` builds one.
template <typename MulFn>
Outputs ProductGrads(const Output& a, bool ta, const Output& b, bool tb, const Output& g,
                     MulFn mul) {
  if (!ta && !tb) return {mul(g, b, false, true, true), mul(a, g, true, false, false)};
  if (!ta && tb) return {mul(g, b, false, false, true), mul(g, a, true, false, false)};
  if (ta && !tb) return {mul(b, g, false, true, true), mul(a, g, false, false, false)};
  return {mul(b, g, true, true, true), mul(g, a, true, true, false)};
}

absl::Status MatMulGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(bool ta, GetBoolAttr(grad::Def(op), "transpose_a"));
  ASSIGN_OR_RETURN(bool tb, GetBoolAttr(grad::Def(op), "transpose_b"));
  *dx = ProductGrads(In(op, 0), ta, In(op, 1), tb, dy[0],
                     [&](const Output& p, const Output& q, bool tp, bool tq, bool of_a) -> Output {
                       const auto attrs = ops::MatMul::TransposeA(tp).TransposeB(tq);
                       return ops::MatMul(s, p, q, of_a ? attrs.GradA(true) : attrs.GradB(true));
                     });
  return absl::OkStatus();
}

// Like MatMul's, then summed over the batch dimensions that x or y was
// broadcast along.
absl::Status BatchMatMulGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(bool adj_x, GetBoolAttr(grad::Def(op), "adj_x"));
  ASSIGN_OR_RETURN(bool adj_y, GetBoolAttr(grad::Def(op), "adj_y"));
  const Output x = In(op, 0);
  const Output y = In(op, 1);
  Outputs grads = ProductGrads(
      x, adj_x, y, adj_y, dy[0],
      [&](const Output& p, const Output& q, bool tp, bool tq, bool of_x) -> Output {
        const auto attrs = ops::BatchMatMulV2::AdjX(tp).AdjY(tq);
        return ops::BatchMatMulV2(s, p, q, of_x ? attrs.GradX(true) : attrs.GradY(true));
      });
  const PartialTensorShape& px = x.shape();
  const PartialTensorShape& py = y.shape();
  if (px.IsFullyDefined() && py.IsFullyDefined() && px.dims() == py.dims() &&
      std::equal(px.dim_sizes().begin(), px.dim_sizes().end() - 2, py.dim_sizes().begin())) {
    *dx = std::move(grads);
    return absl::OkStatus();
  }
  const Output sx = ops::Shape(s, x);
  const Output sy = ops::Shape(s, y);
  const auto batch_dims = [&](const Output& shape) -> Output {
    return ops::StridedSlice(s, shape, {0}, {-2}, {1});
  };
  const ops::BroadcastGradientArgs r(s, batch_dims(sx), batch_dims(sy));
  *dx = {ops::Reshape(s, ops::Sum(s, grads[0], r.r0), sx),
         ops::Reshape(s, ops::Sum(s, grads[1], r.r1), sy)};
  return absl::OkStatus();
}

absl::Status AddNGrad(const Scope&, const Operation& op, const Outputs& dy, Outputs* dx) {
  dx->assign(op.node()->num_inputs(), dy[0]);
  return absl::OkStatus();
}

bool IsFloating(DataType t) {
  t = BaseType(t);
  return t == DT_HALF || t == DT_BFLOAT16 || t == DT_FLOAT || t == DT_DOUBLE || t == DT_COMPLEX64 ||
         t == DT_COMPLEX128;
}

// Only casts between floating types pass a gradient, as in TensorFlow.
absl::Status CastGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const DataType src = BaseType(op.node()->input_type(0));
  if (IsFloating(src) && IsFloating(op.node()->output_type(0))) {
    *dx = {ops::Cast(s, dy[0], src)};
  } else {
    *dx = {Output()};
  }
  return absl::OkStatus();
}

absl::Status SelectGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output c = In(op, 0);
  const Output zeros = ops::ZerosLike(s, dy[0]);
  *dx = {Output(), ops::Select(s, c, dy[0], zeros), ops::Select(s, c, zeros, dy[0])};
  return absl::OkStatus();
}

// SelectV2: each branch's gradient where the condition chose it, summed
// over the dimensions the branch was broadcast along.
absl::Status SelectV2Grad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output c = In(op, 0);
  const Output zero = Scalar(s, 0, BaseType(dy[0].type()));
  const Output out_shape = ops::Shape(s, Out(op, 0));
  const auto reduced = [&](const Output& x, const Output& g) -> Output {
    const Output x_shape = ops::Shape(s, x);
    const ops::BroadcastGradientArgs r(s, x_shape, out_shape);
    return ops::Reshape(s, ops::Sum(s, g, r.r0), x_shape);
  };
  *dx = {Output(), reduced(In(op, 1), ops::SelectV2(s, c, dy[0], zero)),
         reduced(In(op, 2), ops::SelectV2(s, c, zero, dy[0]))};
  return absl::OkStatus();
}

// The shape of a reduction's output had it kept its dimensions:
// `input_shape` with 1 at every axis in `axes` (TensorFlow's reduced_shape).
Output KeptDimsShape(const Scope& s, const Output& input_shape, const Output& axes) {
  const Output rank = ops::Size(s, input_shape);
  const Output flat_axes = ops::Reshape(s, grad::ToInt32(s, axes), {-1});
  const Output positive = ops::FloorMod(s, ops::Add(s, flat_axes, rank), rank);
  return ops::DynamicStitch(s, {Output(ops::Range(s, 0, rank, 1)), positive},
                            {input_shape, Output(ops::Fill(s, ops::Shape(s, positive), 1))});
}

// dy of a reduction over `axes` of `x`, repeated along those axes.
Output SumGradient(const Scope& s, const Output& x, const Output& axes, const Output& dy) {
  const Output sx = ops::Shape(s, x);
  const Output kept = KeptDimsShape(s, sx, axes);
  const Output multiples = ops::FloorDiv(s, sx, ops::Maximum(s, kept, 1));
  return ops::Tile(s, ops::Reshape(s, dy, kept), multiples);
}

absl::Status SumGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {SumGradient(s, In(op, 0), In(op, 1), dy[0]), Output()};
  return absl::OkStatus();
}

absl::Status MeanGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const Output count =
      ops::FloorDiv(s, ops::Size(s, x), ops::Maximum(s, ops::Size(s, Out(op, 0)), 1));
  const Output sum_grad = SumGradient(s, x, In(op, 1), dy[0]);
  *dx = {ops::Div(s, sum_grad, ops::Cast(s, count, BaseType(x.type()))), Output()};
  return absl::OkStatus();
}

// Max and Min: the gradient is shared equally among the elements that
// equal the extremum.
absl::Status MinOrMaxGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const Output axes = In(op, 1);
  const Output kept = KeptDimsShape(s, ops::Shape(s, x), axes);
  const Output y = ops::Reshape(s, Out(op, 0), kept);
  const Output g = ops::Reshape(s, dy[0], kept);
  const Output hits = ops::Cast(s, ops::Equal(s, y, x), BaseType(x.type()));
  const Output num_hits = ops::Reshape(s, ops::Sum(s, hits, axes), kept);
  *dx = {ops::Mul(s, ops::Div(s, hits, num_hits), g), Output()};
  return absl::OkStatus();
}

// dProd/dx_i is the product of the other elements of x_i's group, built
// without dividing by x_i so that zeros are handled: the reduced axes are
// moved to the front and flattened to R rows, and row i of an [R, R, rest]
// stack holds every row with row i replaced by ones.
absl::Status ProdGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const std::optional<std::vector<int64_t>> axes = grad::ConstantInts(In(op, 1));
  const int rank = x.shape().dims();
  if (!axes.has_value() || rank < 0) {
    return absl::UnimplementedError(
        "the gradient of Prod needs constant reduction_indices and an input of known rank");
  }
  std::vector<bool> is_reduced(rank, false);
  for (int64_t a : *axes) {
    if (a < -rank || a >= rank) {
      return absl::InvalidArgumentError(absl::StrFormat("Prod axis %d out of range", a));
    }
    is_reduced[a < 0 ? a + rank : a] = true;
  }
  std::vector<int32_t> reduced;
  std::vector<int32_t> kept;
  for (int i = 0; i < rank; ++i) (is_reduced[i] ? reduced : kept).push_back(i);
  std::vector<int32_t> perm = reduced;
  perm.insert(perm.end(), kept.begin(), kept.end());
  std::vector<int32_t> inverse(rank);
  for (int i = 0; i < rank; ++i) inverse[perm[i]] = i;
  const auto vec = [&](const std::vector<int32_t>& v) { return grad::Ints(s, v); };

  const DataType t = BaseType(x.type());
  const Output sx = ops::Shape(s, x);
  const Output permuted = ops::Transpose(s, x, vec(perm));
  const Output rows = ops::Prod(s, ops::Gather(s, sx, vec(reduced)), 0);
  const Output cols = ops::Prod(s, ops::Gather(s, sx, vec(kept)), 0);
  const Output flat = ops::Reshape(s, permuted, ops::Pack(s, {1, rows, cols}));
  const Output eye = ops::Reshape(
      s, ops::OneHot(s, ops::Range(s, 0, rows, 1), rows, Scalar(s, 1, t), Scalar(s, 0, t)),
      ops::Pack(s, {rows, rows, 1}));
  const Output others = ops::Add(s, ops::Mul(s, flat, ops::Sub(s, Scalar(s, 1, t), eye)), eye);
  const Output products = ops::Reshape(s, ops::Prod(s, others, 1), ops::Shape(s, permuted));
  const Output g = SumGradient(s, x, In(op, 1), dy[0]);
  *dx = {ops::Mul(s, g, ops::Transpose(s, products, vec(inverse))), Output()};
  return absl::OkStatus();
}

}  // namespace

void RegisterMathGradients(GradientRegistry& r) {
  r.Register("Add", AddGrad);
  r.Register("AddV2", AddGrad);
  r.Register("Sub", SubGrad);
  r.Register("Mul", MulGrad);
  r.Register("Div", DivGrad<ops::Div>);
  r.Register("RealDiv", DivGrad<ops::RealDiv>);
  r.Register("DivNoNan", DivGrad<ops::DivNoNan>);
  r.Register("FloorMod", FloorModGrad);
  r.Register("Maximum", MinMaxGrad<false>);
  r.Register("Minimum", MinMaxGrad<true>);
  r.Register("Pow", PowGrad);
  r.Register("SquaredDifference", SquaredDifferenceGrad);
  r.Register("ClipByValue", ClipByValueGrad);
  r.Register("Neg", NegGrad);
  r.Register("Square", SquareGrad);
  r.Register("Sqrt", SqrtGrad);
  r.Register("Rsqrt", RsqrtGrad);
  r.Register("Reciprocal", ReciprocalGrad);
  r.Register("Inv", ReciprocalGrad);
  r.Register("Exp", ExpGrad);
  r.Register("Log", LogGrad);
  r.Register("Abs", AbsGrad);
  r.Register("Sign", SignGrad);
  r.Register("Sigmoid", SigmoidGrad);
  r.Register("Tanh", TanhGrad);
  r.Register("Sin", SinGrad);
  r.Register("Cos", CosGrad);
  r.Register("SigmoidGrad", SigmoidGradGrad);
  r.Register("TanhGrad", TanhGradGrad);
  r.Register("SqrtGrad", SqrtGradGrad);
  r.Register("RsqrtGrad", RsqrtGradGrad);
  r.Register("ReciprocalGrad", ReciprocalGradGrad);
  r.Register("InvGrad", ReciprocalGradGrad);
  r.Register("MatMul", MatMulGrad);
  r.Register("BatchMatMulV2", BatchMatMulGrad);
  r.Register("AddN", AddNGrad);
  r.Register("Cast", CastGrad);
  r.Register("Select", SelectGrad);
  r.Register("SelectV2", SelectV2Grad);
  r.Register("Sum", SumGrad);
  r.Register("Mean", MeanGrad);
  r.Register("Max", MinOrMaxGrad);
  r.Register("Min", MinOrMaxGrad);
  r.Register("Prod", ProdGrad);

  // Piecewise constant, or not numeric. Mod and TruncateMod are left out:
  // TensorFlow defines no gradient for them, so differentiating through
  // them fails there as it does here.
  for (const char* op :
       {"Floor",   "Ceil",      "Round",        "Rint",       "FloorDiv",  "TruncateDiv",
        "IsNan",   "IsInf",     "IsFinite",     "Equal",      "NotEqual",  "Less",
        "Greater", "LessEqual", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
        "ArgMax",  "ArgMin",    "Range",        "Bucketize",  "Bincount",  "DenseBincount"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace rill
