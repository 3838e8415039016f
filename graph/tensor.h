// Tensor: a dtype, a shape and a refcounted 64-byte-aligned buffer that
// several tensors may share (slices and reshapes are views), with typed Eigen
// maps for kernels.
#ifndef RILL_GRAPH_TENSOR_H_
#define RILL_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/allocator.h"
#include "graph/proto/resource_handle.pb.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "graph/variant.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace rill {

// DT_RESOURCE elements are handles, stored (like strings) as objects; only
// the variable kernels touch them, so DispatchType leaves them out.
template <>
struct DataTypeToEnum<ResourceHandleProto> {
  static constexpr DataType value = DT_RESOURCE;
};
// DT_VARIANT elements are Variants (a TensorList ...), objects as well.
template <>
struct DataTypeToEnum<Variant> {
  static constexpr DataType value = DT_VARIANT;
};

// Owns one allocation. Strings, resource handles and variants are constructed in
// place and destroyed with the buffer. Thread safety: immutable after
// construction apart from the element bytes, which the owner of the step
// writes.
class TensorBuffer {
 public:
  // Returns nullptr when the allocator has no memory.
  static std::shared_ptr<TensorBuffer> Allocate(Allocator* allocator, DataType dtype,
                                                int64_t num_elements);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  Allocator* allocator() const { return allocator_; }

 private:
  TensorBuffer(Allocator* allocator, DataType dtype, int64_t num_elements, void* data,
               size_t bytes);

  Allocator* const allocator_;
  const DataType dtype_;
  const int64_t num_elements_;
  void* const data_;
  const size_t bytes_;
};

// A value type: copying a Tensor shares its buffer (like TensorFlow). Use
// DeepCopy for an independent copy.
class Tensor {
 public:
  // Element-wise maps. Tensors store row-major data.
  template <typename T, int N>
  using TensorMap = Eigen::TensorMap<Eigen::Tensor<T, N, Eigen::RowMajor, Eigen::DenseIndex>>;
  template <typename T, int N>
  using ConstTensorMap =
      Eigen::TensorMap<Eigen::Tensor<const T, N, Eigen::RowMajor, Eigen::DenseIndex>>;
  template <typename T>
  using Flat = TensorMap<T, 1>;
  template <typename T>
  using ConstFlat = ConstTensorMap<T, 1>;
  template <typename T>
  using Matrix = TensorMap<T, 2>;
  template <typename T>
  using ConstMatrix = ConstTensorMap<T, 2>;

  Tensor() = default;  // An empty, uninitialized float scalar (IsInitialized() false).
  // Allocates from CpuAllocator(); numeric elements are zero-filled, strings
  // and resource handles empty. Aborts if memory cannot be had; use
  // Allocate for a Status.
  Tensor(DataType dtype, const TensorShape& shape);

  // The element bytes are left uninitialized (strings and resource handles
  // are constructed). RESOURCE_EXHAUSTED when the allocator fails;
  // INVALID_ARGUMENT for a dtype a Tensor cannot hold.
  static absl::StatusOr<Tensor> Allocate(Allocator* allocator, DataType dtype,
                                         const TensorShape& shape);

  // A scalar or 1-D tensor of the given values, for tests and constants.
  template <typename T>
  static Tensor Scalar(T value);
  template <typename T>
  static Tensor FromVector(absl::Span<const T> values, const TensorShape& shape);
  template <typename T>
  static Tensor FromVector(std::initializer_list<T> values, const TensorShape& shape) {
    return FromVector<T>(absl::Span<const T>(values.begin(), values.size()), shape);
  }

  bool IsInitialized() const { return buffer_ != nullptr; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  // Bytes of element storage (sizeof(std::string) per string element).
  size_t TotalBytes() const;

  void* raw_data() const;
  template <typename T>
  T* data() const {
    CheckType<T>();
    return static_cast<T*>(raw_data());
  }
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }
  // Whether raw_data() is aligned to kTensorAlignment (views may not be).
  bool IsAligned() const;

  // A view of rows [start, limit) along dimension 0, sharing the buffer.
  // REQUIRES: dims() >= 1 and 0 <= start <= limit <= dim_size(0).
  Tensor Slice(int64_t start, int64_t limit) const;
  // A view with another shape of the same element count.
  absl::StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  // An independent copy with its own buffer.
  Tensor DeepCopy() const;

  template <typename T>
  Flat<T> flat() const {
    return Flat<T>(data<T>(), NumElements());
  }
  template <typename T>
  Matrix<T> matrix() const {
    CheckRank(2);
    return Matrix<T>(data<T>(), dim_size(0), dim_size(1));
  }
  template <typename T>
  Flat<T> vec() const {
    CheckRank(1);
    return flat<T>();
  }
  template <typename T>
  T& scalar() const {
    CheckRank(0);
    return *data<T>();
  }
  template <typename T, int N>
  TensorMap<T, N> tensor() const {
    CheckRank(N);
    Eigen::array<Eigen::DenseIndex, N> dims;
    for (int i = 0; i < N; ++i) dims[i] = dim_size(i);
    return TensorMap<T, N>(data<T>(), dims);
  }
  // The elements viewed with another rank: the leading dimensions are
  // folded so that the result has N dimensions (N >= 1), as TensorFlow's
  // flat_inner_dims. REQUIRES: N >= 1.
  template <typename T, int N>
  TensorMap<T, N> flat_inner_dims() const;

  // "Tensor<type: float shape: [2,3] values: 1 2 3 4 5 6>"; at most
  // `max_entries` values.
  std::string DebugString(int max_entries = 6) const;
  // The first `max_entries` values separated by spaces ("..." when cut).
  std::string SummarizeValue(int64_t max_entries) const;

 private:
  Tensor(DataType dtype, TensorShape shape, std::shared_ptr<TensorBuffer> buffer, size_t offset)
      : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(offset) {}

  template <typename T>
  void CheckType() const;
  void CheckRank(int rank) const;

  DataType dtype_ = DT_FLOAT;
  TensorShape shape_;
  std::shared_ptr<TensorBuffer> buffer_;
  size_t offset_ = 0;  // Bytes from the start of buffer_ (views).
};

// Element-wise equality of dtype, shape and values (bitwise for floats,
// except that +0 == -0 and NaN == NaN at the same position).
bool TensorsEqual(const Tensor& a, const Tensor& b);

namespace tensor_internal {
[[noreturn]] void TypeMismatch(DataType have, DataType want);
[[noreturn]] void RankMismatch(int have, int want);
}  // namespace tensor_internal

template <typename T>
void Tensor::CheckType() const {
  if (BaseType(dtype_) != kDataTypeOf<T>) tensor_internal::TypeMismatch(dtype_, kDataTypeOf<T>);
}

inline void Tensor::CheckRank(int rank) const {
  if (dims() != rank) tensor_internal::RankMismatch(dims(), rank);
}

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t(kDataTypeOf<T>, TensorShape());
  *t.data<T>() = std::move(value);
  return t;
}

template <typename T>
Tensor Tensor::FromVector(absl::Span<const T> values, const TensorShape& shape) {
  Tensor t(kDataTypeOf<T>, shape);
  if (static_cast<int64_t>(values.size()) != t.NumElements()) {
    tensor_internal::RankMismatch(static_cast<int>(values.size()),
                                  static_cast<int>(t.NumElements()));
  }
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

template <typename T, int N>
Tensor::TensorMap<T, N> Tensor::flat_inner_dims() const {
  static_assert(N >= 1);
  Eigen::array<Eigen::DenseIndex, N> out;
  const int rank = dims();
  for (int i = 0; i < N; ++i) out[i] = 1;
  // The last N-1 dimensions are kept; everything before folds into out[0].
  int64_t outer = 1;
  for (int i = 0; i < rank; ++i) {
    const int k = i - (rank - N);
    if (k <= 0) {
      outer *= dim_size(i);
    } else if (k < N) {  // Always true; tells the compiler that out[k] is in bounds.
      out[k] = dim_size(i);
    }
  }
  out[0] = rank == 0 && N == 1 ? 1 : outer;
  return TensorMap<T, N>(data<T>(), out);
}

}  // namespace rill

#endif  // RILL_GRAPH_TENSOR_H_
