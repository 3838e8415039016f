#include "graph/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Hands out CPU memory filled with a byte pattern and counts live bytes, so
// tests can see what Allocate leaves in a buffer and when it is released.
class PatternAllocator final : public Allocator {
 public:
  std::string Name() const override { return "pattern"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    void* p = CpuAllocator()->AllocateRaw(alignment, bytes);
    std::memset(p, 0xAB, bytes);
    live_bytes_ += bytes;
    return p;
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    live_bytes_ -= bytes;
    CpuAllocator()->DeallocateRaw(ptr, bytes);
  }
  size_t live_bytes() const { return live_bytes_; }

 private:
  size_t live_bytes_ = 0;
};

class FailingAllocator final : public Allocator {
 public:
  std::string Name() const override { return "failing"; }
  void* AllocateRaw(size_t, size_t) override { return nullptr; }
  void DeallocateRaw(void*, size_t) override {}
};

TEST(CpuAllocator, AlignsEveryAllocationIncludingEmptyOnes) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{3}, size_t{64}, size_t{1000}}) {
    void* p = CpuAllocator()->AllocateRaw(kTensorAlignment, bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    CpuAllocator()->DeallocateRaw(p, bytes);
  }
}

TEST(Tensor, DefaultIsUninitialized) {
  Tensor t;
  EXPECT_FALSE(t.IsInitialized());
  EXPECT_EQ(t.dtype(), DT_FLOAT);
  EXPECT_EQ(t.raw_data(), nullptr);
  EXPECT_EQ(t.TotalBytes(), 0u);
  EXPECT_EQ(t.SummarizeValue(3), "<uninitialized>");
}

TEST(Tensor, FreshBuffersAre64ByteAligned) {
  for (DataType dtype : {DT_FLOAT, DT_INT8, DT_HALF, DT_COMPLEX128, DT_STRING, DT_BOOL}) {
    for (int64_t n : {0, 1, 3, 17, 1000}) {
      Tensor t(dtype, TensorShape({n}));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u)
          << DataTypeString(dtype) << " " << n;
      EXPECT_TRUE(t.IsAligned());
    }
  }
}

TEST(Tensor, ConstructorZeroFillsNumericData) {
  Tensor f(DT_FLOAT, TensorShape({3, 5}));
  for (int i = 0; i < 15; ++i) EXPECT_EQ(f.flat<float>()(i), 0.0f);
  Tensor h(DT_HALF, TensorShape({4}));
  EXPECT_EQ(static_cast<float>(h.flat<half>()(3)), 0.0f);
  Tensor c(DT_COMPLEX64, TensorShape({2}));
  EXPECT_EQ(c.flat<complex64>()(1), complex64(0, 0));
  Tensor b(DT_BOOL, TensorShape({2}));
  EXPECT_FALSE(b.flat<bool>()(0));
}

TEST(Tensor, ConstructorMakesEmptyStrings) {
  Tensor t(DT_STRING, TensorShape({3}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.flat<std::string>()(i), "");
  EXPECT_EQ(t.TotalBytes(), 3 * sizeof(std::string));
}

TEST(Tensor, AllocateLeavesNumericBytesAsTheAllocatorGaveThem) {
  PatternAllocator allocator;
  ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Allocate(&allocator, DT_UINT8, TensorShape({8})));
  EXPECT_EQ(t.flat<uint8_t>()(0), 0xAB);
  EXPECT_EQ(t.flat<uint8_t>()(7), 0xAB);
}

TEST(Tensor, AllocateConstructsStrings) {
  PatternAllocator allocator;
  ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Allocate(&allocator, DT_STRING, TensorShape({4})));
  EXPECT_EQ(t.flat<std::string>()(2), "");
  t.flat<std::string>()(2) = std::string(100, 'x');
  EXPECT_EQ(t.flat<std::string>()(2).size(), 100u);
}

TEST(Tensor, BufferIsReturnedWhenTheLastSharerGoes) {
  PatternAllocator allocator;
  {
    ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Allocate(&allocator, DT_DOUBLE, TensorShape({4, 2})));
    EXPECT_EQ(allocator.live_bytes(), 64u);
    Tensor view = t.Slice(1, 3);
    t = Tensor();
    EXPECT_EQ(allocator.live_bytes(), 64u);
  }
  EXPECT_EQ(allocator.live_bytes(), 0u);
}

TEST(Tensor, AllocateRejectsReferenceTypes) {
  EXPECT_THAT(Tensor::Allocate(CpuAllocator(), DT_FLOAT_REF, TensorShape({2})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float_ref")));
}

TEST(Tensor, AllocateRejectsTypesATensorCannotHold) {
  for (DataType dtype : {DT_INVALID, DT_QINT8}) {
    EXPECT_THAT(Tensor::Allocate(CpuAllocator(), dtype, TensorShape({2})),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(DataTypeString(dtype))));
  }
}

TEST(Tensor, AllocateReportsExhaustedMemory) {
  FailingAllocator failing;
  EXPECT_THAT(Tensor::Allocate(&failing, DT_FLOAT, TensorShape({2, 3})),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("[2,3]"), HasSubstr("failing"))));
  // The byte count itself overflows size_t.
  const TensorShape huge({std::numeric_limits<int64_t>::max() / 2});
  EXPECT_THAT(Tensor::Allocate(CpuAllocator(), DT_COMPLEX128, huge),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("complex128")));
}

TEST(Tensor, AllocateRefusesMoreBytesThanOneTensorMayTake) {
  const testing::ScopedMaxTensorBytes limit(1024);
  EXPECT_OK(Tensor::Allocate(CpuAllocator(), DT_FLOAT, TensorShape({256})));
  EXPECT_THAT(Tensor::Allocate(CpuAllocator(), DT_FLOAT, TensorShape({257})),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("float tensor of shape [257] needs 1028 bytes"),
                             HasSubstr("1024 bytes"))));
}

TEST(Tensor, MaxTensorBytesDefaultsToPartOfThePhysicalMemory) {
  SetMaxTensorBytes(0);
  EXPECT_GT(MaxTensorBytes(), size_t{1} << 20);
  SetMaxTensorBytes(4096);
  EXPECT_EQ(MaxTensorBytes(), 4096u);
  SetMaxTensorBytes(0);
  EXPECT_GT(MaxTensorBytes(), 4096u);
}

TEST(Tensor, TotalBytesCountsElementStorage) {
  EXPECT_EQ(Tensor(DT_FLOAT, TensorShape({2, 3})).TotalBytes(), 24u);
  EXPECT_EQ(Tensor(DT_BFLOAT16, TensorShape({5})).TotalBytes(), 10u);
  EXPECT_EQ(Tensor(DT_INT64, TensorShape({0, 9})).TotalBytes(), 0u);
}

TEST(Tensor, CopiesShareTheBuffer) {
  Tensor a(DT_INT32, TensorShape({3}));
  Tensor b = a;
  EXPECT_TRUE(a.SharesBufferWith(b));
  b.flat<int32_t>()(1) = 42;
  EXPECT_EQ(a.flat<int32_t>()(1), 42);
  EXPECT_FALSE(Tensor().SharesBufferWith(Tensor()));
}

TEST(Tensor, SliceIsAViewOfRows) {
  Tensor t = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7}, TensorShape({4, 2}));
  Tensor rows = t.Slice(1, 3);
  EXPECT_EQ(rows.shape(), TensorShape({2, 2}));
  EXPECT_TRUE(rows.SharesBufferWith(t));
  EXPECT_EQ(rows.matrix<float>()(0, 0), 2.0f);
  EXPECT_EQ(rows.matrix<float>()(1, 1), 5.0f);
  rows.matrix<float>()(1, 0) = -4.0f;
  EXPECT_EQ(t.matrix<float>()(2, 0), -4.0f);
  t.flat<float>()(3) = 30.0f;
  EXPECT_EQ(rows.flat<float>()(1), 30.0f);
}

TEST(Tensor, SliceOffsetsBreakAlignmentWhereTheyMust) {
  Tensor t(DT_FLOAT, TensorShape({32, 1}));
  EXPECT_FALSE(t.Slice(1, 2).IsAligned());
  EXPECT_TRUE(t.Slice(16, 32).IsAligned());
}

TEST(Tensor, SliceOfSlicesAccumulatesOffsets) {
  Tensor t = Tensor::FromVector<int64_t>({10, 11, 12, 13, 14, 15}, TensorShape({6}));
  Tensor inner = t.Slice(1, 5).Slice(2, 4);
  EXPECT_EQ(inner.NumElements(), 2);
  EXPECT_EQ(inner.vec<int64_t>()(0), 13);
  EXPECT_EQ(inner.vec<int64_t>()(1), 14);
}

TEST(Tensor, EmptySlicesAreAllowed) {
  Tensor t(DT_FLOAT, TensorShape({0, 3}));
  EXPECT_EQ(t.Slice(0, 0).NumElements(), 0);
  Tensor u(DT_FLOAT, TensorShape({4, 3}));
  EXPECT_EQ(u.Slice(4, 4).shape(), TensorShape({0, 3}));
}

TEST(TensorDeathTest, SliceOutOfRangeAborts) {
  Tensor t(DT_FLOAT, TensorShape({4}));
  EXPECT_DEATH(t.Slice(2, 5), "Slice\\(2, 5\\)");
  EXPECT_DEATH(Tensor::Scalar(1.0f).Slice(0, 0), "Slice");
}

TEST(Tensor, ReshapedIsAViewWithTheSameElements) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({6}));
  ASSERT_OK_AND_ASSIGN(Tensor m, t.Reshaped(TensorShape({2, 3})));
  EXPECT_TRUE(m.SharesBufferWith(t));
  EXPECT_EQ(m.matrix<int32_t>()(1, 0), 4);
  m.matrix<int32_t>()(0, 2) = 33;
  EXPECT_EQ(t.vec<int32_t>()(2), 33);
}

TEST(Tensor, ReshapedOfASliceKeepsTheOffset) {
  Tensor t = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape({3, 2}));
  ASSERT_OK_AND_ASSIGN(Tensor flat, t.Slice(1, 3).Reshaped(TensorShape({4})));
  EXPECT_EQ(flat.vec<float>()(0), 2.0f);
  EXPECT_EQ(flat.vec<float>()(3), 5.0f);
}

TEST(Tensor, ReshapedRejectsAnotherElementCount) {
  Tensor t(DT_FLOAT, TensorShape({2, 3}));
  EXPECT_THAT(t.Reshaped(TensorShape({4})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("[2,3]"), HasSubstr("[4]"), HasSubstr("6 elements"))));
  EXPECT_THAT(Tensor().Reshaped(TensorShape({1})),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("uninitialized")));
}

TEST(Tensor, DeepCopyIsIndependent) {
  Tensor t = Tensor::FromVector<double>({1.5, 2.5, 3.5, 4.5}, TensorShape({2, 2}));
  Tensor copy = t.Slice(1, 2).DeepCopy();
  EXPECT_FALSE(copy.SharesBufferWith(t));
  EXPECT_TRUE(copy.IsAligned());
  EXPECT_EQ(copy.shape(), TensorShape({1, 2}));
  t.matrix<double>()(1, 0) = 0.0;
  EXPECT_EQ(copy.matrix<double>()(0, 0), 3.5);
  EXPECT_FALSE(Tensor().DeepCopy().IsInitialized());
}

TEST(Tensor, StringsSurviveCopiesSlicesAndDeepCopies) {
  Tensor t(DT_STRING, TensorShape({3}));
  t.vec<std::string>()(0) = "short";
  t.vec<std::string>()(1) = std::string(200, 'L');  // Beyond the small-string buffer.
  t.vec<std::string>()(2) = std::string("a\0b", 3);
  Tensor deep;
  Tensor slice;
  {
    Tensor shared = t;
    slice = shared.Slice(1, 3);
    deep = shared.DeepCopy();
  }
  t = Tensor();
  EXPECT_EQ(slice.vec<std::string>()(0), std::string(200, 'L'));
  EXPECT_EQ(slice.vec<std::string>()(1), std::string("a\0b", 3));
  EXPECT_EQ(deep.vec<std::string>()(0), "short");
  deep.vec<std::string>()(1) = "changed";
  EXPECT_EQ(slice.vec<std::string>()(0), std::string(200, 'L'));
}

TEST(Tensor, FlatSumUsesEigen) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Eigen::Tensor<float, 0, Eigen::RowMajor> sum = t.flat<float>().sum();
  EXPECT_EQ(sum(), 21.0f);
  t.flat<float>() = t.flat<float>() * 2.0f;
  EXPECT_EQ(t.matrix<float>()(1, 2), 12.0f);
}

TEST(Tensor, MatrixIsRowMajor) {
  Tensor t = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  auto m = t.matrix<int64_t>();
  EXPECT_EQ(m.dimension(0), 2);
  EXPECT_EQ(m.dimension(1), 3);
  EXPECT_EQ(m(0, 2), 3);
  EXPECT_EQ(m(1, 0), 4);
}

TEST(Tensor, MatrixRowSumsThroughEigenReduction) {
  Tensor a = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor sums(DT_DOUBLE, TensorShape({2}));
  sums.vec<double>() = a.matrix<double>().sum(Eigen::array<int, 1>{1});
  EXPECT_TRUE(TensorsEqual(sums, Tensor::FromVector<double>({6, 15}, TensorShape({2}))));
}

TEST(Tensor, TensorOfRankThreeIndexes) {
  Tensor t(DT_INT32, TensorShape({2, 3, 4}));
  for (int i = 0; i < 24; ++i) t.flat<int32_t>()(i) = i;
  auto m = t.tensor<int32_t, 3>();
  EXPECT_EQ(m(1, 2, 3), 23);
  EXPECT_EQ(m(1, 0, 1), 13);
}

TEST(Tensor, FlatInnerDimsFoldsLeadingDimensions) {
  Tensor t(DT_FLOAT, TensorShape({2, 3, 4}));
  for (int i = 0; i < 24; ++i) t.flat<float>()(i) = static_cast<float>(i);
  auto m = t.flat_inner_dims<float, 2>();
  EXPECT_EQ(m.dimension(0), 6);
  EXPECT_EQ(m.dimension(1), 4);
  EXPECT_EQ(m(5, 3), 23.0f);
  auto v = t.flat_inner_dims<float, 1>();
  EXPECT_EQ(v.dimension(0), 24);
}

TEST(Tensor, FlatInnerDimsPadsLowerRanksWithOnes) {
  Tensor t = Tensor::FromVector<float>({7, 8, 9}, TensorShape({3}));
  auto m = t.flat_inner_dims<float, 2>();
  EXPECT_EQ(m.dimension(0), 1);
  EXPECT_EQ(m.dimension(1), 3);
  EXPECT_EQ(m(0, 2), 9.0f);
  const Tensor scalar = Tensor::Scalar(4.0f);
  auto s = scalar.flat_inner_dims<float, 1>();
  EXPECT_EQ(s.dimension(0), 1);
  EXPECT_EQ(s(0), 4.0f);
}

TEST(Tensor, ScalarHoldsItsValue) {
  Tensor t = Tensor::Scalar<int64_t>(-7);
  EXPECT_EQ(t.dtype(), DT_INT64);
  EXPECT_EQ(t.dims(), 0);
  EXPECT_EQ(t.scalar<int64_t>(), -7);
  EXPECT_EQ(Tensor::Scalar(std::string("hi")).scalar<std::string>(), "hi");
}

TEST(TensorDeathTest, WrongTypeAccessAborts) {
  Tensor t(DT_FLOAT, TensorShape({2}));
  EXPECT_DEATH(t.flat<int32_t>(), "holds float but was accessed as int32");
}

TEST(TensorDeathTest, WrongRankAccessAborts) {
  Tensor t(DT_FLOAT, TensorShape({2}));
  EXPECT_DEATH(t.matrix<float>(), "have 1, want 2");
  EXPECT_DEATH(Tensor::FromVector<float>({1, 2, 3}, TensorShape({2})), "have 3, want 2");
}

TEST(TensorDeathTest, ConstructorAbortsForReferenceTypes) {
  EXPECT_DEATH(Tensor(DT_INT32_REF, TensorShape({1})), "int32_ref");
}

TEST(Tensor, DebugStringShowsTypeShapeAndValues) {
  Tensor t = Tensor::FromVector<float>({1, 2.5f, -3, 4, 5, 6, 7}, TensorShape({7}));
  EXPECT_EQ(t.DebugString(), "Tensor<type: float shape: [7] values: 1 2.5 -3 4 5 6...>");
  EXPECT_EQ(t.DebugString(10), "Tensor<type: float shape: [7] values: 1 2.5 -3 4 5 6 7>");
  EXPECT_EQ(t.SummarizeValue(2), "1 2.5...");
  EXPECT_EQ(t.SummarizeValue(0), "...");
}

TEST(Tensor, SummarizeValuePrintsEachTypeReadably) {
  EXPECT_EQ(Tensor::FromVector<half>({half(1.5f), half(-2.0f)}, TensorShape({2})).SummarizeValue(9),
            "1.5 -2");
  EXPECT_EQ(Tensor::FromVector<bfloat16>({bfloat16(0.5f)}, TensorShape({1})).SummarizeValue(9),
            "0.5");
  EXPECT_EQ(Tensor::FromVector<bool>({true, false}, TensorShape({2})).SummarizeValue(9),
            "true false");
  EXPECT_EQ(Tensor::FromVector<int8_t>({-5, 65}, TensorShape({2})).SummarizeValue(9), "-5 65");
  EXPECT_EQ(Tensor::FromVector<uint8_t>({200}, TensorShape({1})).SummarizeValue(9), "200");
  EXPECT_EQ(Tensor::FromVector<complex64>({complex64(1, -2)}, TensorShape({1})).SummarizeValue(9),
            "(1,-2)");
  EXPECT_EQ(Tensor::FromVector<std::string>({"a b", std::string("q\"\n\x01", 4)}, TensorShape({2}))
                .SummarizeValue(9),
            "\"a b\" \"q\\\"\\n\\x01\"");
  EXPECT_EQ(Tensor(DT_INT32, TensorShape({0})).DebugString(),
            "Tensor<type: int32 shape: [0] values: >");
}

TEST(TensorsEqual, ComparesDtypeShapeAndValues) {
  const Tensor a = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  EXPECT_TRUE(TensorsEqual(a, a.DeepCopy()));
  EXPECT_FALSE(TensorsEqual(a, Tensor::FromVector<float>({1, 2, 3, 5}, TensorShape({2, 2}))));
  EXPECT_FALSE(TensorsEqual(a, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4}))));
  EXPECT_FALSE(TensorsEqual(a, Tensor::FromVector<double>({1, 2, 3, 4}, TensorShape({2, 2}))));
  EXPECT_FALSE(TensorsEqual(a, Tensor()));
  EXPECT_TRUE(TensorsEqual(Tensor(), Tensor()));
}

TEST(TensorsEqual, TreatsSignedZerosAndNaNsAsEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(TensorsEqual(Tensor::FromVector<float>({0.0f, nan}, TensorShape({2})),
                           Tensor::FromVector<float>({-0.0f, nan}, TensorShape({2}))));
  EXPECT_FALSE(TensorsEqual(Tensor::FromVector<float>({nan, 1.0f}, TensorShape({2})),
                            Tensor::FromVector<float>({1.0f, nan}, TensorShape({2}))));
  EXPECT_FALSE(TensorsEqual(Tensor::Scalar(1.0f), Tensor::Scalar(std::nextafter(1.0f, 2.0f))));
}

TEST(TensorsEqual, ComparesStrings) {
  EXPECT_TRUE(TensorsEqual(Tensor::Scalar(std::string("x")), Tensor::Scalar(std::string("x"))));
  EXPECT_FALSE(TensorsEqual(Tensor::Scalar(std::string("x")), Tensor::Scalar(std::string("y"))));
}

}  // namespace
}  // namespace rill
