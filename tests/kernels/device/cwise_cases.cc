// Device table cases for the element-wise kernels (unary ops, activations
// and their gradients, binary ops and comparisons with broadcasting,
// logic, AddN, Cast, Fill, ZerosLike, OnesLike, Select, BiasAdd,
// AssignAdd, AssignSub) and the optimizer updates: every GPU type, same
// shapes, scalars either side, broadcasts, empty and odd sizes, every attr.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "graph/attr_value_util.h"
#include "tests/kernels/device/device_cases.h"

namespace rill::testing {
namespace {

// How close the GPU must come: float to 1e-5 (1e-4 for transcendental
// functions, whose CUDA and Eigen approximations differ by some ulps),
// double to 1e-12; integers, bools and exact roundings exactly.
enum class Tol { kExact, kArithmetic, kTranscendental };

void SetTolerance(DeviceCase& c, DataType dtype, Tol tol) {
  if (tol == Tol::kExact || (dtype != DT_FLOAT && dtype != DT_DOUBLE && dtype != DT_HALF)) {
    c.atol = c.rtol = 0;
  } else if (dtype == DT_DOUBLE) {
    c.atol = c.rtol = 1e-12;
  } else if (dtype == DT_HALF) {
    c.atol = c.rtol = 1e-3;
  } else {
    c.atol = c.rtol = tol == Tol::kTranscendental ? 1e-4 : 1e-5;
  }
}

Tensor Bools(const TensorShape& shape, int seed) {
  const Tensor bits = RandomInts(DT_INT64, shape, seed, 0, 2);
  Tensor t(DT_BOOL, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<bool>()[i] = bits.data<int64_t>()[i] != 0;
  return t;
}

// Random values of `dtype` in [low, high) (integers: truncated bounds;
// bools: either).
Tensor Values(DataType dtype, const TensorShape& shape, int seed, double low, double high) {
  if (dtype == DT_BOOL) return Bools(shape, seed);
  if (dtype == DT_INT64) {
    return RandomInts(dtype, shape, seed, static_cast<int64_t>(low), static_cast<int64_t>(high));
  }
  return Random(dtype, shape, seed, low, high);
}

// Values of magnitude in [0.5, 2), or for integers [1, 20), half of them
// negative: divisors that are never zero.
Tensor AwayFromZero(DataType dtype, const TensorShape& shape, int seed) {
  Tensor t = Values(dtype, shape, seed, dtype == DT_INT64 ? 1 : 0.5, dtype == DT_INT64 ? 20 : 2);
  for (int64_t i = 1; i < t.NumElements(); i += 2) {
    if (dtype == DT_FLOAT) t.data<float>()[i] = -t.data<float>()[i];
    if (dtype == DT_DOUBLE) t.data<double>()[i] = -t.data<double>()[i];
    if (dtype == DT_INT64) t.data<int64_t>()[i] = -t.data<int64_t>()[i];
  }
  return t;
}

// Small whole values (-2 .. 2) of `dtype`, so that comparisons find equal
// elements.
Tensor SmallInts(DataType dtype, const TensorShape& shape, int seed) {
  if (dtype == DT_BOOL) return Bools(shape, seed);
  const Tensor ints = RandomInts(DT_INT64, shape, seed, -2, 3);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const int64_t v = ints.data<int64_t>()[i];
    if (dtype == DT_FLOAT) t.data<float>()[i] = static_cast<float>(v);
    if (dtype == DT_DOUBLE) t.data<double>()[i] = static_cast<double>(v);
    if (dtype == DT_INT64) t.data<int64_t>()[i] = v;
  }
  return t;
}

// `values` as a vector of `dtype` (float, double or half).
Tensor FloatsOf(DataType dtype, const std::vector<double>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  Tensor t(dtype, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DT_FLOAT) t.data<float>()[i] = static_cast<float>(values[i]);
    if (dtype == DT_DOUBLE) t.data<double>()[i] = values[i];
    if (dtype == DT_HALF) t.data<half>()[i] = static_cast<half>(values[i]);
  }
  return t;
}

class Builder {
 public:
  explicit Builder(std::vector<DeviceCase>& cases) : cases_(cases) {}

  // Adds `op` on `args`, named op_type_name.
  void Add(const std::string& op, DataType dtype, const std::string& name, Tol tol,
           std::vector<CaseArg> args, Attrs attrs = {}) {
    DeviceCase c;
    c.name = op + "_" + DataTypeString(dtype) + "_" + name;
    c.op = op;
    c.attrs = std::move(attrs);
    c.args = std::move(args);
    SetTolerance(c, dtype, tol);
    cases_.push_back(std::move(c));
  }
  // TensorFlow's outputs of the case added last.
  void Expect(std::vector<Tensor> outputs) { cases_.back().expected = std::move(outputs); }
  int seed() { return ++seed_; }

 private:
  std::vector<DeviceCase>& cases_;
  int seed_ = 0;
};

const TensorShape kOdd({257});
const TensorShape kThousand({4, 250});
// Zero-sized dimensions first, in the middle and last.
const TensorShape kEmpty({0, 3});
const TensorShape kEmptyMiddle({2, 0, 5});
const TensorShape kEmptyLast({4, 0});

struct UnarySpec {
  const char* op;
  std::vector<DataType> types;
  double low, high;
  Tol tol;
};

void AddUnaryCases(Builder& b) {
  const std::vector<DataType> fdi = {DT_FLOAT, DT_DOUBLE, DT_INT64};
  const std::vector<DataType> fd = {DT_FLOAT, DT_DOUBLE};
  const std::vector<DataType> fdh = {DT_FLOAT, DT_DOUBLE, DT_HALF};
  const std::vector<UnarySpec> specs = {
      {"Neg", fdi, -100, 100, Tol::kExact},
      {"Square", fdi, -100, 100, Tol::kArithmetic},
      {"Abs", fdi, -100, 100, Tol::kExact},
      {"Sign", fdi, -3, 3, Tol::kExact},
      {"Reciprocal", fd, 0.5, 4, Tol::kArithmetic},
      {"Inv", fd, -4, -0.5, Tol::kArithmetic},
      {"Floor", fdh, -10, 10, Tol::kExact},
      {"Ceil", fdh, -10, 10, Tol::kExact},
      {"Rint", fd, -10, 10, Tol::kExact},
      {"Round", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_INT64}, -10, 10, Tol::kExact},
      {"Sqrt", fd, 0.1, 10, Tol::kArithmetic},
      {"Rsqrt", fd, 0.1, 10, Tol::kTranscendental},
      {"Exp", fd, -5, 5, Tol::kTranscendental},
      {"Log", fd, 0.1, 10, Tol::kTranscendental},
      {"Sigmoid", fd, -6, 6, Tol::kTranscendental},
      {"Tanh", fd, -4, 4, Tol::kTranscendental},
      {"Relu", fdi, -10, 10, Tol::kExact},
      {"Relu6", fdi, -10, 10, Tol::kExact},
  };
  for (const UnarySpec& s : specs) {
    for (DataType t : s.types) {
      b.Add(s.op, t, "odd", s.tol, {In(Values(t, kOdd, b.seed(), s.low, s.high))});
      b.Add(s.op, t, "thousand", s.tol, {In(Values(t, kThousand, b.seed(), s.low, s.high))});
      b.Add(s.op, t, "empty", s.tol, {In(Values(t, kEmpty, 1, 0, 1))});
    }
    b.Add(s.op, s.types[0], "empty_middle", s.tol, {In(Values(s.types[0], kEmptyMiddle, 1, 0, 1))});
    b.Add(s.op, s.types[0], "empty_last", s.tol, {In(Values(s.types[0], kEmptyLast, 1, 0, 1))});
  }
  // Halves round to even; Rint does the same.
  const std::vector<double> halves = {-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51};
  for (DataType t : fdh) b.Add("Round", t, "halves", Tol::kExact, {In(FloatsOf(t, halves))});
  for (DataType t : fd) b.Add("Rint", t, "halves", Tol::kExact, {In(FloatsOf(t, halves))});

  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> special = {nan, inf, -inf, 1.5, -2, 0, -0.0, 65504, 1e-3};
  for (const char* op : {"IsNan", "IsInf", "IsFinite"}) {
    for (DataType t : fdh) {
      b.Add(op, t, "special", Tol::kExact, {In(FloatsOf(t, special))});
      b.Add(op, t, "odd", Tol::kExact, {In(Values(t, kOdd, b.seed(), -10, 10))});
      b.Add(op, t, "empty", Tol::kExact, {In(Values(t, kEmptyMiddle, 1, -10, 10))});
    }
  }
}

void AddGradCases(Builder& b) {
  const std::vector<std::pair<std::string, TensorShape>> shapes = {
      {"odd", kOdd}, {"thousand", kThousand}, {"empty", kEmpty}, {"empty_last", kEmptyLast}};
  for (DataType t : {DT_FLOAT, DT_DOUBLE}) {
    for (const char* op : {"SigmoidGrad", "TanhGrad", "RsqrtGrad", "ReciprocalGrad", "InvGrad"}) {
      for (const auto& [name, shape] : shapes) {
        b.Add(op, t, name, Tol::kArithmetic,
              {In(Random(t, shape, b.seed())), In(Random(t, shape, b.seed()))});
      }
    }
    // y away from zero: the gradient divides by it.
    b.Add("SqrtGrad", t, "odd", Tol::kArithmetic,
          {In(Random(t, kOdd, b.seed(), 0.5, 2)), In(Random(t, kOdd, b.seed()))});
    b.Add("SqrtGrad", t, "empty", Tol::kArithmetic,
          {In(Random(t, kEmptyMiddle, b.seed(), 0.5, 2)), In(Random(t, kEmptyMiddle, b.seed()))});
  }
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT64}) {
    for (const auto& [name, shape] : shapes) {
      b.Add("ReluGrad", t, name, Tol::kExact,
            {In(Values(t, shape, b.seed(), -10, 10)), In(Values(t, shape, b.seed(), -10, 10))});
    }
  }
}

// Operand shapes: same shape, a scalar either side, broadcasts both ways,
// a size-1 vector against a matrix, and empty operands: a zero-sized
// dimension against the same, against 1 (which broadcasts to 0) and
// against a scalar.
struct ShapePair {
  const char* name;
  TensorShape a, b;
};
const std::vector<ShapePair>& BinaryShapes() {
  static const auto* shapes = new std::vector<ShapePair>{
      {"same", kOdd, kOdd},
      {"thousand", kThousand, kThousand},
      {"scalar_left", TensorShape(), TensorShape({3, 5})},
      {"scalar_right", TensorShape({3, 5}), TensorShape()},
      {"bcast_3x1x5_4x5", TensorShape({3, 1, 5}), TensorShape({4, 5})},
      {"bcast_4x5_3x1x5", TensorShape({4, 5}), TensorShape({3, 1, 5})},
      {"bcast_1_2x3", TensorShape({1}), TensorShape({2, 3})},
      {"bcast_rows", TensorShape({33, 1}), TensorShape({1, 31})},
      {"bcast_5d", TensorShape({2, 1, 3, 1, 5}), TensorShape({1, 4, 1, 2, 5})},
      {"empty", TensorShape({0, 3}), TensorShape({3})},
      {"empty_same", TensorShape({2, 0, 3}), TensorShape({2, 0, 3})},
      {"empty_bcast_0x1_1x5", TensorShape({0, 1}), TensorShape({1, 5})},
      {"empty_bcast_4x1_0", TensorShape({4, 1}), TensorShape({0})},
      {"empty_scalar_left", TensorShape(), TensorShape({3, 0})},
      {"empty_bcast_rank3", TensorShape({3, 1, 0}), TensorShape({1, 4, 1})},
  };
  return *shapes;
}

enum class Operands { kAny, kDivisor, kPow };

struct BinarySpec {
  const char* op;
  std::vector<DataType> types;
  Operands operands;
  Tol tol;
};

std::vector<CaseArg> BinaryArgs(Builder& b, DataType t, const ShapePair& s, Operands operands) {
  switch (operands) {
    case Operands::kDivisor:
      return {In(Values(t, s.a, b.seed(), -100, 100)), In(AwayFromZero(t, s.b, b.seed()))};
    case Operands::kPow:
      // Positive bases; integer exponents from 0.
      if (t == DT_INT64) {
        return {In(Values(t, s.a, b.seed(), -5, 6)), In(Values(t, s.b, b.seed(), 0, 8))};
      }
      return {In(Values(t, s.a, b.seed(), 0.5, 2)), In(Values(t, s.b, b.seed(), -3, 3))};
    case Operands::kAny:
      break;
  }
  return {In(Values(t, s.a, b.seed(), -100, 100)), In(Values(t, s.b, b.seed(), -100, 100))};
}

void AddBinaryCases(Builder& b) {
  const std::vector<DataType> fdi = {DT_FLOAT, DT_DOUBLE, DT_INT64};
  const std::vector<DataType> fd = {DT_FLOAT, DT_DOUBLE};
  const std::vector<BinarySpec> specs = {
      {"Add", fdi, Operands::kAny, Tol::kArithmetic},
      {"AddV2", fdi, Operands::kAny, Tol::kArithmetic},
      {"Sub", fdi, Operands::kAny, Tol::kArithmetic},
      {"Mul", fdi, Operands::kAny, Tol::kArithmetic},
      {"Div", fdi, Operands::kDivisor, Tol::kArithmetic},
      {"RealDiv", fd, Operands::kDivisor, Tol::kArithmetic},
      {"TruncateDiv", {DT_INT64}, Operands::kDivisor, Tol::kExact},
      {"FloorDiv", fdi, Operands::kDivisor, Tol::kArithmetic},
      {"FloorMod", fdi, Operands::kDivisor, Tol::kArithmetic},
      {"TruncateMod", fdi, Operands::kDivisor, Tol::kArithmetic},
      {"Mod", fdi, Operands::kDivisor, Tol::kArithmetic},
      {"SquaredDifference", fdi, Operands::kAny, Tol::kArithmetic},
      {"Maximum", fdi, Operands::kAny, Tol::kExact},
      {"Minimum", fdi, Operands::kAny, Tol::kExact},
      {"Pow", fdi, Operands::kPow, Tol::kTranscendental},
  };
  for (const BinarySpec& spec : specs) {
    for (DataType t : spec.types) {
      for (const ShapePair& s : BinaryShapes()) {
        b.Add(spec.op, t, s.name, spec.tol, BinaryArgs(b, t, s, spec.operands));
      }
    }
  }
  // The one integer quotient that overflows wraps, as on the CPU.
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  for (const char* op : {"Div", "FloorDiv", "FloorMod", "TruncateMod"}) {
    b.Add(op, DT_INT64, "lowest_by_minus_one", Tol::kExact,
          {In(Tensor::FromVector<int64_t>({lowest, 7, -7}, TensorShape({3}))),
           In(Tensor::FromVector<int64_t>({-1, -1, 2}, TensorShape({3})))});
  }
}

void AddCompareCases(Builder& b) {
  const std::vector<const char*> ordered = {"Less", "LessEqual", "Greater", "GreaterEqual"};
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}) {
    std::vector<const char*> ops = {"Equal", "NotEqual"};
    if (t != DT_BOOL) ops.insert(ops.end(), ordered.begin(), ordered.end());
    for (const char* op : ops) {
      for (const ShapePair& s : BinaryShapes()) {
        b.Add(op, t, s.name, Tol::kExact,
              {In(SmallInts(t, s.a, b.seed())), In(SmallInts(t, s.b, b.seed()))});
      }
    }
    // Operands that do not broadcast compare as a whole when allowed.
    for (const char* op : {"Equal", "NotEqual"}) {
      b.Add(op, t, "incompatible", Tol::kExact,
            {In(SmallInts(t, TensorShape({2, 3}), b.seed())),
             In(SmallInts(t, TensorShape({4}), b.seed()))},
            {{"incompatible_shape_error", MakeAttr(false)}});
      b.Add(op, t, "compatible_lenient", Tol::kExact,
            {In(SmallInts(t, TensorShape({2, 3}), b.seed())),
             In(SmallInts(t, TensorShape({3}), b.seed()))},
            {{"incompatible_shape_error", MakeAttr(false)}});
      // An empty operand against a nonempty one of another size is no
      // broadcast either: TensorFlow's scalar answer.
      b.Add(op, t, "incompatible_empty", Tol::kExact,
            {In(SmallInts(t, TensorShape({0}), b.seed())),
             In(SmallInts(t, TensorShape({3}), b.seed()))},
            {{"incompatible_shape_error", MakeAttr(false)}});
      b.Expect({Filled(DT_BOOL, TensorShape(), std::string(op) == "NotEqual" ? 1 : 0)});
    }
  }
  for (const char* op : {"LogicalAnd", "LogicalOr"}) {
    for (const ShapePair& s : BinaryShapes()) {
      b.Add(op, DT_BOOL, s.name, Tol::kExact, {In(Bools(s.a, b.seed())), In(Bools(s.b, b.seed()))});
    }
  }
  const std::vector<std::pair<std::string, TensorShape>> shapes = {
      {"257", kOdd}, {"1000", kThousand}, {"0", kEmpty}, {"empty_last", kEmptyLast}};
  for (const auto& [name, shape] : shapes) {
    b.Add("LogicalNot", DT_BOOL, name, Tol::kExact, {In(Bools(shape, b.seed()))});
  }
}

void AddArrayCases(Builder& b) {
  const std::vector<DataType> fdi = {DT_FLOAT, DT_DOUBLE, DT_INT64};
  for (DataType t : fdi) {
    for (int n : {1, 3, 16, 20}) {
      std::vector<Tensor> xs;
      for (int i = 0; i < n; ++i) xs.push_back(Values(t, kOdd, b.seed(), -10, 10));
      b.Add("AddN", t, std::to_string(n), Tol::kArithmetic, {List(std::move(xs))});
    }
    b.Add("AddN", t, "empty", Tol::kExact,
          {List({Values(t, kEmpty, 1, 0, 1), Values(t, kEmpty, 2, 0, 1)})});
    b.Add("AddN", t, "empty_one", Tol::kExact, {List({Values(t, kEmptyLast, 1, 0, 1)})});
    b.Add("AddN", t, "empty_three", Tol::kExact,
          {List({Values(t, kEmptyMiddle, 1, 0, 1), Values(t, kEmptyMiddle, 2, 0, 1),
                 Values(t, kEmptyMiddle, 3, 0, 1)})});
  }

  const std::vector<DataType> cast_types = {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL, DT_HALF};
  for (DataType from : cast_types) {
    for (DataType to : cast_types) {
      // Exact: every conversion rounds the same way on both devices.
      b.Add("Cast", from, std::string("to_") + DataTypeString(to), Tol::kExact,
            {In(Values(from, kOdd, b.seed(), -1000, 1000))}, {{"DstT", MakeAttr(to)}});
      b.Add("Cast", from, std::string("empty_to_") + DataTypeString(to), Tol::kExact,
            {In(Values(from, kEmptyMiddle, 1, -10, 10))}, {{"DstT", MakeAttr(to)}});
    }
  }
  b.Add("Cast", DT_FLOAT, "empty", Tol::kExact, {In(Random(DT_FLOAT, kEmpty, 1))},
        {{"DstT", MakeAttr(DT_HALF)}});

  for (DataType t : cast_types) {
    b.Add("Fill", t, "odd", Tol::kExact, {In(Int32s({257})), In(ScalarOf(t, 3.25))});
    b.Add("Fill", t, "matrix", Tol::kExact, {In(Int32s({3, 1, 5})), In(ScalarOf(t, -2))});
    b.Add("Fill", t, "empty", Tol::kExact, {In(Int32s({0, 4})), In(ScalarOf(t, 1))});
    b.Add("Fill", t, "empty_last", Tol::kExact, {In(Int32s({3, 5, 0})), In(ScalarOf(t, 1))});
    b.Add("Fill", t, "empty_vector", Tol::kExact, {In(Int32s({0})), In(ScalarOf(t, 1))});
    for (const char* op : {"ZerosLike", "OnesLike"}) {
      b.Add(op, t, "odd", Tol::kExact, {In(Values(t, kOdd, b.seed(), -10, 10))});
      b.Add(op, t, "empty", Tol::kExact, {In(Values(t, kEmpty, 1, -10, 10))});
      b.Add(op, t, "empty_middle", Tol::kExact, {In(Values(t, kEmptyMiddle, 1, -10, 10))});
    }
  }

  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}) {
    const TensorShape shape({7, 37});
    auto add = [&](const std::string& name, const Tensor& cond, const TensorShape& value) {
      b.Add("Select", t, name, Tol::kExact,
            {In(cond), In(Values(t, value, b.seed(), -10, 10)),
             In(Values(t, value, b.seed(), -10, 10))});
    };
    add("scalar_true", Tensor::Scalar<bool>(true), shape);
    add("scalar_false", Tensor::Scalar<bool>(false), shape);
    add("elementwise", Bools(shape, b.seed()), shape);
    add("rows", Bools(TensorShape({7}), b.seed()), shape);
    add("rows_3d", Bools(TensorShape({3}), b.seed()), TensorShape({3, 4, 5}));
    add("vector", Bools(kOdd, b.seed()), kOdd);
    add("empty", Bools(TensorShape({0}), b.seed()), TensorShape({0, 4}));
    add("empty_scalar", Tensor::Scalar<bool>(true), kEmptyMiddle);
    add("empty_elementwise", Bools(kEmptyLast, b.seed()), kEmptyLast);
    add("empty_rows", Bools(TensorShape({4}), b.seed()), kEmptyLast);
    add("empty_rows_3d", Bools(TensorShape({2}), b.seed()), kEmptyMiddle);
  }
}

void AddBiasAddCases(Builder& b) {
  struct Layout {
    const char* name;
    const char* format;
    TensorShape value;
    int64_t channels;
  };
  const std::vector<Layout> layouts = {
      {"nhwc_4d", "NHWC", TensorShape({2, 3, 4, 5}), 5},
      {"nhwc_2d", "NHWC", TensorShape({7, 33}), 33},
      {"nchw_4d", "NCHW", TensorShape({2, 3, 4, 5}), 3},
      {"nchw_3d", "NCHW", TensorShape({2, 3, 7}), 3},
      {"nhwc_empty", "NHWC", TensorShape({0, 4}), 4},
      {"nhwc_no_channels", "NHWC", TensorShape({3, 2, 0}), 0},
      {"nhwc_empty_image", "NHWC", TensorShape({2, 0, 3, 4}), 4},
      {"nchw_empty_batch", "NCHW", TensorShape({0, 3, 4, 5}), 3},
      {"nchw_no_channels", "NCHW", TensorShape({2, 0, 4, 5}), 0},
      {"nchw_empty_image", "NCHW", TensorShape({2, 3, 0}), 3},
  };
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT64}) {
    for (const Layout& l : layouts) {
      b.Add("BiasAdd", t, l.name, Tol::kArithmetic,
            {In(Values(t, l.value, b.seed(), -10, 10)),
             In(Values(t, TensorShape({l.channels}), b.seed(), -10, 10))},
            {{"data_format", MakeAttr(l.format)}});
    }
  }
}

// Reference variables: the table compares each variable after the run.
void AddUpdateCases(Builder& b) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT64}) {
    for (const char* op : {"AssignAdd", "AssignSub"}) {
      for (bool locking : {false, true}) {
        b.Add(op, t, locking ? "locked" : "unlocked", Tol::kArithmetic,
              {Ref(Values(t, kOdd, b.seed(), -10, 10)), In(Values(t, kOdd, b.seed(), -10, 10))},
              {{"use_locking", MakeAttr(locking)}});
      }
      b.Add(op, t, "empty", Tol::kExact,
            {Ref(Values(t, kEmptyMiddle, 1, -10, 10)), In(Values(t, kEmptyMiddle, 2, -10, 10))});
    }
  }
  for (DataType t : {DT_FLOAT, DT_DOUBLE}) {
    for (bool locking : {false, true}) {
      const std::string lock = locking ? "locked" : "unlocked";
      b.Add("ApplyGradientDescent", t, lock, Tol::kArithmetic,
            {Ref(Random(t, kOdd, b.seed())), In(ScalarOf(t, 0.1)), In(Random(t, kOdd, b.seed()))},
            {{"use_locking", MakeAttr(locking)}});
      for (bool nesterov : {false, true}) {
        const std::string name = lock + (nesterov ? "_nesterov" : "");
        const Attrs attrs = {{"use_locking", MakeAttr(locking)},
                             {"use_nesterov", MakeAttr(nesterov)}};
        b.Add("ApplyMomentum", t, name, Tol::kArithmetic,
              {Ref(Random(t, kThousand, b.seed())), Ref(Random(t, kThousand, b.seed())),
               In(ScalarOf(t, 0.05)), In(Random(t, kThousand, b.seed())), In(ScalarOf(t, 0.9))},
              attrs);
        b.Add("ApplyAdam", t, name, Tol::kTranscendental,
              {Ref(Random(t, kThousand, b.seed())), Ref(Random(t, kThousand, b.seed())),
               Ref(Random(t, kThousand, b.seed(), 0, 1)), In(ScalarOf(t, 0.9 * 0.9)),
               In(ScalarOf(t, 0.999 * 0.999)), In(ScalarOf(t, 0.01)), In(ScalarOf(t, 0.9)),
               In(ScalarOf(t, 0.999)), In(ScalarOf(t, 1e-7)), In(Random(t, kThousand, b.seed()))},
              attrs);
      }
    }
    b.Add("ApplyGradientDescent", t, "empty", Tol::kArithmetic,
          {Ref(Random(t, kEmpty, 1)), In(ScalarOf(t, 0.1)), In(Random(t, kEmpty, 2))});
    b.Add("ApplyGradientDescent", t, "empty_middle", Tol::kArithmetic,
          {Ref(Random(t, kEmptyMiddle, 1)), In(ScalarOf(t, 0.1)), In(Random(t, kEmptyMiddle, 2))},
          {{"use_locking", MakeAttr(true)}});
    for (bool nesterov : {false, true}) {
      const std::string name = nesterov ? "empty_nesterov" : "empty";
      const Attrs attrs = {{"use_nesterov", MakeAttr(nesterov)}};
      b.Add("ApplyMomentum", t, name, Tol::kArithmetic,
            {Ref(Random(t, kEmptyLast, 1)), Ref(Random(t, kEmptyLast, 2)), In(ScalarOf(t, 0.05)),
             In(Random(t, kEmptyLast, 3)), In(ScalarOf(t, 0.9))},
            attrs);
      b.Add("ApplyAdam", t, name, Tol::kTranscendental,
            {Ref(Random(t, kEmptyMiddle, 1)), Ref(Random(t, kEmptyMiddle, 2)),
             Ref(Random(t, kEmptyMiddle, 3, 0, 1)), In(ScalarOf(t, 0.9 * 0.9)),
             In(ScalarOf(t, 0.999 * 0.999)), In(ScalarOf(t, 0.01)), In(ScalarOf(t, 0.9)),
             In(ScalarOf(t, 0.999)), In(ScalarOf(t, 1e-7)), In(Random(t, kEmptyMiddle, 4))},
            attrs);
    }
  }
}

}  // namespace

std::vector<DeviceCase> CwiseCases() {
  std::vector<DeviceCase> cases;
  Builder b(cases);
  AddUnaryCases(b);
  AddGradCases(b);
  AddBinaryCases(b);
  AddCompareCases(b);
  AddArrayCases(b);
  AddBiasAddCases(b);
  AddUpdateCases(b);
  return cases;
}

}  // namespace rill::testing
