// Device table cases for the kernels that move elements around
// (Transpose, Tile, Slice, StridedSlice, ConcatV2, Pack, Split, SplitV,
// Unpack, Gather, GatherV2, OneHot): every GPU type, views and copies,
// every StridedSlice mask, negative strides and axes, empty and odd
// shapes.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/attr_value_util.h"
#include "tests/kernels/device/device_cases.h"

namespace rill::testing {
namespace {

Tensor Int(int32_t value) { return Tensor::Scalar<int32_t>(value); }

// Random elements of any moved type (bools both ways).
Tensor Values(DataType dtype, const TensorShape& shape, int seed) {
  if (dtype == DT_FLOAT || dtype == DT_DOUBLE) return Random(dtype, shape, seed);
  if (dtype == DT_INT64) return RandomInts(DT_INT64, shape, seed, -1000, 1000);
  const Tensor bits = RandomInts(DT_INT64, shape, seed, 0, 2);
  Tensor t(DT_BOOL, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<bool>()[i] = bits.data<int64_t>()[i] != 0;
  return t;
}

const std::vector<DataType>& MovedTypes() {
  static const auto* types = new std::vector<DataType>{DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL};
  return *types;
}

class Builder {
 public:
  explicit Builder(std::vector<DeviceCase>& cases) : cases_(cases) {}

  // Adds `op` on `args`, named op_type_name.
  void Add(const std::string& op, DataType dtype, const std::string& name,
           std::vector<CaseArg> args, Attrs attrs = {}) {
    DeviceCase c;
    c.name = op + "_" + DataTypeString(dtype) + "_" + name;
    c.op = op;
    c.attrs = std::move(attrs);
    c.args = std::move(args);
    // Moves are exact.
    c.atol = 0;
    c.rtol = 0;
    cases_.push_back(std::move(c));
  }
  Tensor X(DataType dtype, const TensorShape& shape) { return Values(dtype, shape, ++seed_); }
  std::vector<Tensor> Xs(DataType dtype, const std::vector<TensorShape>& shapes) {
    std::vector<Tensor> xs;
    for (const TensorShape& s : shapes) xs.push_back(X(dtype, s));
    return xs;
  }

 private:
  std::vector<DeviceCase>& cases_;
  int seed_ = 2000;
};

void AddTransposeAndTile(Builder& b, DataType t) {
  const std::vector<std::tuple<std::string, TensorShape, std::vector<int32_t>>> transposes = {
      {"perm_201", {2, 3, 4}, {2, 0, 1}},
      {"matrix_257x33", {257, 33}, {1, 0}},
      {"unit_dim_moves", {3, 1, 5}, {1, 0, 2}},
      {"identity", {4, 5}, {0, 1}},
      {"scalar", TensorShape(), {}},
      {"empty", {0, 3}, {1, 0}},
      {"empty_middle", {2, 0, 3}, {2, 0, 1}},
      {"empty_last_rank4", {2, 3, 4, 0}, {3, 1, 2, 0}},
      {"rank5", {2, 3, 1, 4, 5}, {4, 2, 0, 3, 1}},
      {"batch_1_nhwc_to_nchw", {1, 7, 9, 3}, {0, 3, 1, 2}},
  };
  for (const auto& [name, shape, perm] : transposes) {
    b.Add("Transpose", t, name, {In(b.X(t, shape)), In(Int32s(perm))});
  }
  const std::vector<std::tuple<std::string, TensorShape, std::vector<int32_t>>> tiles = {
      {"rows", {2, 3}, {2, 1}},
      {"vector", {3}, {5}},
      {"rank3", {2, 1, 3}, {1, 4, 2}},
      {"zero_multiple", {2, 3}, {0, 2}},
      {"unit_257", {1}, {257}},
      {"identity", {4, 5}, {1, 1}},
      {"empty_input", {0, 2}, {3, 2}},
      {"empty_inner", {3, 0}, {2, 3}},
      {"empty_middle_zero_multiple", {2, 0, 3}, {1, 2, 0}},
  };
  for (const auto& [name, shape, multiples] : tiles) {
    b.Add("Tile", t, name, {In(b.X(t, shape)), In(Int32s(multiples))});
  }
}

void AddSlices(Builder& b, DataType t) {
  const std::vector<
      std::tuple<std::string, TensorShape, std::vector<int32_t>, std::vector<int32_t>>>
      slices = {
          {"box", {5, 6, 7}, {1, 2, 3}, {2, -1, 3}},
          {"whole_rows_view", {6, 4}, {2, 0}, {3, -1}},
          {"empty", {4, 5}, {1, 1}, {0, 2}},
          {"vector_257", {257}, {5}, {200}},
          {"inner_column", {9, 8}, {0, 7}, {9, 1}},
          {"empty_input", {0, 5}, {0, 1}, {0, 2}},
          {"empty_input_rows_view", {4, 0}, {1, 0}, {2, 0}},
          {"all_of_empty", {3, 0, 2}, {0, 0, 0}, {-1, -1, -1}},
          {"empty_last", {3, 4}, {1, 4}, {2, 0}},
      };
  for (const auto& [name, shape, begin, size] : slices) {
    b.Add("Slice", t, name, {In(b.X(t, shape)), In(Int32s(begin)), In(Int32s(size))});
  }

  struct Strided {
    std::string name;
    TensorShape shape;
    std::vector<int32_t> begin, end, strides;
    int begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_mask = 0;
  };
  // numpy spellings on x of the given shape.
  const std::vector<Strided> strided = {
      {"x1_all_step2", {2, 3, 4}, {1, 0, 0}, {2, 0, 0}, {1, 1, 2}, 0b110, 0b110, 0, 0, 0b001},
      {"all_reversed_last",
       {2, 3, 4},
       {0, 0, -1},
       {0, 0, 0},
       {1, -1, 1},
       0b011,
       0b011,
       0,
       0,
       0b100},
      {"ellipsis_1to3", {2, 3, 4}, {0, 1}, {0, 3}, {1, 1}, 0, 0, 0b01},
      {"newaxis_shrink_reverse",
       {2, 3, 4},
       {0, 0, 2, 3},
       {0, 1, 0, 4},
       {1, 1, -1, 1},
       0,
       0,
       0,
       0b0001,
       0b1010},
      {"clamped", {2, 3, 4}, {1, -2}, {100, 100}, {1, 1}},
      {"empty", {2, 3, 4}, {0, 2}, {1, 1}, {1, 1}, 0, 0, 0, 0, 0b01},
      {"ellipsis_newaxis_shrink",
       {2, 3, 4},
       {0, 0, 1},
       {0, 0, 2},
       {1, 1, 1},
       0,
       0,
       0b001,
       0b010,
       0b100},
      {"newaxis_ellipsis", {2, 3, 4}, {0, 0, 0}, {0, 0, 2}, {1, 1, 1}, 0, 0, 0b010, 0b001},
      {"clamped_reverse",
       {2, 3, 4},
       {-100, 100, -1},
       {100, -100, 0},
       {1, -1, 1},
       0,
       0,
       0,
       0,
       0b100},
      {"reverse_257", {257}, {0}, {0}, {-1}, 0b1, 0b1},
      {"step3_odd", {257, 3}, {1, 0}, {257, 3}, {3, 2}},
      {"negative_step3", {31, 5}, {-1, 4}, {0, 0}, {-3, -2}, 0b00, 0b10},
      {"shrink_to_scalar", {4, 5}, {2, -1}, {3, 0}, {1, 1}, 0, 0, 0, 0, 0b11},
      {"unit_dims", {1, 6, 1}, {0, 1, 0}, {1, 5, 1}, {1, 2, 1}},
      {"empty_input", {0, 4}, {0, 1}, {0, 3}, {1, 1}, 0b01, 0b01},
      {"empty_input_reversed", {3, 0}, {0, 0}, {0, 0}, {-1, 1}, 0b11, 0b11},
      {"empty_input_step2", {2, 0, 5}, {0, 0, 0}, {0, 0, 5}, {1, 1, 2}, 0b011, 0b011},
      {"empty_input_newaxis", {2, 0}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0b011, 0b011, 0, 0b100},
      {"empty_shrink_rest", {2, 0, 3}, {1}, {2}, {1}, 0, 0, 0, 0, 0b1},
  };
  for (const Strided& s : strided) {
    b.Add("StridedSlice", t, s.name,
          {In(b.X(t, s.shape)), In(Int32s(s.begin)), In(Int32s(s.end)), In(Int32s(s.strides))},
          {{"begin_mask", MakeAttr(s.begin_mask)},
           {"end_mask", MakeAttr(s.end_mask)},
           {"ellipsis_mask", MakeAttr(s.ellipsis_mask)},
           {"new_axis_mask", MakeAttr(s.new_axis_mask)},
           {"shrink_axis_mask", MakeAttr(s.shrink_mask)}});
  }
}

void AddJoinsAndSplits(Builder& b, DataType t) {
  b.Add("ConcatV2", t, "three_axis_1", {List(b.Xs(t, {{2, 3}, {2, 5}, {2, 1}})), In(Int(1))});
  b.Add("ConcatV2", t, "axis_0", {List(b.Xs(t, {{3, 4}, {1, 4}})), In(Int(0))});
  b.Add("ConcatV2", t, "negative_axis", {List(b.Xs(t, {{2, 3, 2}, {2, 3, 5}})), In(Int(-1))});
  b.Add("ConcatV2", t, "with_empty", {List(b.Xs(t, {{2, 0}, {2, 3}, {2, 0}})), In(Int(1))});
  b.Add("ConcatV2", t, "odd_257", {List(b.Xs(t, {{1, 257}, {1, 3}})), In(Int(1))});
  b.Add("ConcatV2", t, "middle_axis", {List(b.Xs(t, {{3, 1, 7}, {3, 2, 7}})), In(Int(1))});
  b.Add("ConcatV2", t, "all_empty", {List(b.Xs(t, {{0, 3}, {0, 3}})), In(Int(0))});
  b.Add("ConcatV2", t, "empty_rows_axis_1", {List(b.Xs(t, {{0, 2}, {0, 3}})), In(Int(1))});
  b.Add("ConcatV2", t, "empty_inner_axis_0", {List(b.Xs(t, {{2, 0}, {3, 0}, {1, 0}})), In(Int(0))});
  b.Add("ConcatV2", t, "empty_middle_axis_last",
        {List(b.Xs(t, {{2, 0, 4}, {2, 0, 1}})), In(Int(-1))});

  b.Add("Pack", t, "axis_0", {List(b.Xs(t, {{2, 3}, {2, 3}, {2, 3}}))});
  b.Add("Pack", t, "axis_1", {List(b.Xs(t, {{2, 3}, {2, 3}}))}, {{"axis", MakeAttr(1)}});
  b.Add("Pack", t, "axis_last", {List(b.Xs(t, {{5, 3}, {5, 3}, {5, 3}}))},
        {{"axis", MakeAttr(-1)}});
  b.Add("Pack", t, "scalars", {List(b.Xs(t, {{}, {}, {}, {}}))});
  b.Add("Pack", t, "one_input", {List(b.Xs(t, {{257}}))});
  b.Add("Pack", t, "empty_axis_0", {List(b.Xs(t, {{0, 3}, {0, 3}}))});
  b.Add("Pack", t, "empty_axis_1", {List(b.Xs(t, {{0, 3}, {0, 3}, {0, 3}}))},
        {{"axis", MakeAttr(1)}});
  b.Add("Pack", t, "empty_axis_last", {List(b.Xs(t, {{2, 0}, {2, 0}}))}, {{"axis", MakeAttr(-1)}});

  b.Add("Split", t, "dim0_views", {In(Int(0)), In(b.X(t, {6, 4}))}, {{"num_split", MakeAttr(3)}});
  b.Add("Split", t, "inner_axis", {In(Int(1)), In(b.X(t, {4, 6}))}, {{"num_split", MakeAttr(2)}});
  b.Add("Split", t, "negative_axis", {In(Int(-1)), In(b.X(t, {2, 3, 6}))},
        {{"num_split", MakeAttr(3)}});
  b.Add("Split", t, "one_piece", {In(Int(0)), In(b.X(t, {3, 3}))}, {{"num_split", MakeAttr(1)}});
  b.Add("Split", t, "empty_rows", {In(Int(1)), In(b.X(t, {0, 4}))}, {{"num_split", MakeAttr(2)}});
  b.Add("Split", t, "empty_split_axis", {In(Int(0)), In(b.X(t, {0, 4}))},
        {{"num_split", MakeAttr(2)}});
  b.Add("Split", t, "empty_inner_views", {In(Int(0)), In(b.X(t, {4, 0}))},
        {{"num_split", MakeAttr(2)}});
  b.Add("Split", t, "empty_middle", {In(Int(-1)), In(b.X(t, {2, 0, 6}))},
        {{"num_split", MakeAttr(3)}});

  b.Add("SplitV", t, "inferred_size", {In(b.X(t, {5, 7})), In(Int32s({2, -1, 1})), In(Int(1))},
        {{"num_split", MakeAttr(3)}});
  b.Add("SplitV", t, "dim0_views", {In(b.X(t, {5, 7})), In(Int32s({3, 2})), In(Int(0))},
        {{"num_split", MakeAttr(2)}});
  b.Add("SplitV", t, "empty_piece", {In(b.X(t, {4, 3})), In(Int32s({0, 3})), In(Int(-1))},
        {{"num_split", MakeAttr(2)}});
  b.Add("SplitV", t, "empty_rows", {In(b.X(t, {0, 5})), In(Int32s({2, -1})), In(Int(1))},
        {{"num_split", MakeAttr(2)}});
  b.Add("SplitV", t, "empty_inner_views", {In(b.X(t, {3, 0})), In(Int32s({1, 2})), In(Int(0))},
        {{"num_split", MakeAttr(2)}});
  b.Add("SplitV", t, "empty_split_axis", {In(b.X(t, {2, 0})), In(Int32s({0, -1})), In(Int(1))},
        {{"num_split", MakeAttr(2)}});

  b.Add("Unpack", t, "axis_0", {In(b.X(t, {3, 4}))}, {{"num", MakeAttr(3)}});
  b.Add("Unpack", t, "axis_1", {In(b.X(t, {3, 4}))}, {{"num", MakeAttr(4)}, {"axis", MakeAttr(1)}});
  b.Add("Unpack", t, "negative_axis", {In(b.X(t, {2, 3, 4}))},
        {{"num", MakeAttr(4)}, {"axis", MakeAttr(-1)}});
  b.Add("Unpack", t, "empty_inner", {In(b.X(t, {3, 0}))}, {{"num", MakeAttr(3)}});
  b.Add("Unpack", t, "empty_rows", {In(b.X(t, {0, 2}))},
        {{"num", MakeAttr(2)}, {"axis", MakeAttr(1)}});
  b.Add("Unpack", t, "empty_middle", {In(b.X(t, {2, 0, 3}))},
        {{"num", MakeAttr(3)}, {"axis", MakeAttr(-1)}});
}

void AddGathers(Builder& b, DataType t) {
  const auto indices = [](DataType dtype, const TensorShape& shape, int64_t bound, int seed) {
    return RandomInts(dtype, shape, seed, 0, bound);
  };
  b.Add("GatherV2", t, "int32_rows",
        {In(b.X(t, {10, 4})), In(indices(DT_INT32, {5}, 10, 1)), In(Int(0))});
  b.Add("GatherV2", t, "int64_axis_1",
        {In(b.X(t, {3, 8, 5})), In(indices(DT_INT64, {2, 3}, 8, 2)), In(Int(1))});
  b.Add("GatherV2", t, "negative_axis",
        {In(b.X(t, {3, 8, 5})), In(indices(DT_INT32, {7}, 5, 3)), In(Int(-1))});
  b.Add("GatherV2", t, "scalar_index",
        {In(b.X(t, {6, 3})), In(Tensor::Scalar<int64_t>(4)), In(Int(0))});
  b.Add("GatherV2", t, "no_indices",
        {In(b.X(t, {6, 3})), In(indices(DT_INT32, {0}, 6, 4)), In(Int(0))});
  b.Add("GatherV2", t, "many_257",
        {In(b.X(t, {33, 16})), In(indices(DT_INT64, {257}, 33, 5)), In(Int(0))});
  b.Add("Gather", t, "int64_rows", {In(b.X(t, {10, 4})), In(indices(DT_INT64, {3}, 10, 6))});
  b.Add("Gather", t, "int32_vector", {In(b.X(t, {10})), In(indices(DT_INT32, {2, 2}, 10, 7))});
  b.Add("GatherV2", t, "empty_rows",
        {In(b.X(t, {6, 0})), In(indices(DT_INT32, {4}, 6, 11)), In(Int(0))});
  b.Add("GatherV2", t, "empty_params_no_indices",
        {In(b.X(t, {0, 3})), In(indices(DT_INT64, {0}, 1, 12)), In(Int(0))});
  b.Add("GatherV2", t, "empty_outer",
        {In(b.X(t, {0, 5})), In(indices(DT_INT64, {2}, 5, 13)), In(Int(1))});
  b.Add("GatherV2", t, "no_indices_axis_1",
        {In(b.X(t, {3, 4, 2})), In(indices(DT_INT32, {2, 0}, 4, 14)), In(Int(1))});
  b.Add("Gather", t, "no_indices", {In(b.X(t, {5, 3})), In(indices(DT_INT32, {0, 2}, 5, 15))});
  b.Add("Gather", t, "empty_rows", {In(b.X(t, {5, 0})), In(indices(DT_INT64, {3}, 5, 16))});

  // Out-of-range indices give a row of off_value on both devices.
  const Tensor with_outliers = Tensor::FromVector<int64_t>({0, 3, -1, 7, 2}, TensorShape({5}));
  const Tensor on = ScalarOf(t, 1), off = ScalarOf(t, 0);
  const Tensor on_odd = ScalarOf(t, 5), off_odd = ScalarOf(t, -2);
  b.Add("OneHot", t, "int64_last_axis", {In(with_outliers), In(Int(4)), In(on), In(off)});
  b.Add("OneHot", t, "int32_axis_0",
        {In(indices(DT_INT32, {2, 3}, 5, 8)), In(Int(5)), In(on_odd), In(off_odd)},
        {{"axis", MakeAttr(0)}});
  b.Add("OneHot", t, "int64_axis_1",
        {In(indices(DT_INT64, {2, 3}, 5, 9)), In(Int(5)), In(on_odd), In(off)},
        {{"axis", MakeAttr(1)}});
  b.Add("OneHot", t, "int32_batch_257",
        {In(indices(DT_INT32, {257}, 10, 10)), In(Int(10)), In(on), In(off_odd)});
  b.Add("OneHot", t, "zero_depth", {In(with_outliers), In(Int(0)), In(on), In(off)});
  b.Add("OneHot", t, "scalar_index", {In(Tensor::Scalar<int64_t>(2)), In(Int(3)), In(on), In(off)});
  b.Add("OneHot", t, "no_indices",
        {In(indices(DT_INT64, {0}, 4, 17)), In(Int(4)), In(on), In(off)});
  b.Add("OneHot", t, "no_indices_axis_0",
        {In(indices(DT_INT32, {2, 0}, 4, 18)), In(Int(4)), In(on_odd), In(off_odd)},
        {{"axis", MakeAttr(0)}});
  b.Add("OneHot", t, "zero_depth_axis_1",
        {In(indices(DT_INT32, {2, 3}, 4, 19)), In(Int(0)), In(on), In(off)},
        {{"axis", MakeAttr(1)}});
}

}  // namespace

std::vector<DeviceCase> TransformCases() {
  std::vector<DeviceCase> cases;
  Builder b(cases);
  for (DataType t : MovedTypes()) {
    AddTransposeAndTile(b, t);
    AddSlices(b, t);
    AddJoinsAndSplits(b, t);
    AddGathers(b, t);
  }
  return cases;
}

}  // namespace rill::testing
