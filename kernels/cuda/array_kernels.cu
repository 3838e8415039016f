// rill's CUDA Cast, Fill and Select kernels: conversions as C++'s
// static_cast (through float for half), and fills and selects that move
// words of the element's size, whatever its type.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/array_kernels.h"
#include "kernels/cuda/cwise_kernels.h"
#include "kernels/cuda/launch.h"

namespace rill::cuda {
namespace {

template <typename From, typename To>
__device__ To Convert(From x) {
  if constexpr (std::is_same_v<From, Half>) {
    return Convert<float, To>(__half2float(__ushort_as_half(x.bits)));
  } else if constexpr (std::is_same_v<To, Half>) {
    // Through float, as Eigen::half converts (a double rounds twice).
    return Half{__half_as_ushort(__float2half_rn(static_cast<float>(x)))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n) {
  RILL_GRID_LOOP(i, n) { y[i] = Convert<From, To>(x[i]); }
}

template <typename From>
void LaunchCastFrom(CastType to, const From* x, void* y, int64_t n, cudaStream_t stream) {
  const int blocks = BlocksFor(n);
  switch (to) {
    case CastType::kFloat:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<float*>(y), n);
      break;
    case CastType::kDouble:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<double*>(y), n);
      break;
    case CastType::kInt64:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<int64_t*>(y), n);
      break;
    case CastType::kBool:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<bool*>(y), n);
      break;
    case CastType::kHalf:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<Half*>(y), n);
      break;
  }
}

template <typename Word>
__global__ void FillKernel(Word* out, int64_t n, const Word* value, Word bits) {
  const Word v = value != nullptr ? *value : bits;
  RILL_GRID_LOOP(i, n) { out[i] = v; }
}

template <typename Word>
void LaunchFillWords(void* out, int64_t n, const void* value, uint64_t bits, cudaStream_t stream) {
  FillKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      static_cast<Word*>(out), n, static_cast<const Word*>(value), static_cast<Word>(bits));
}

template <typename Word>
__global__ void SelectKernel(const bool* cond, int64_t rows, const Word* t, const Word* e,
                             Word* out, int64_t n) {
  const int64_t inner = rows == 0 ? 0 : n / rows;
  RILL_GRID_LOOP(i, n) {
    const bool c = rows == 0 ? cond[0] : cond[rows == n ? i : i / inner];
    out[i] = c ? t[i] : e[i];
  }
}

template <typename Word>
void LaunchSelectWords(const bool* cond, int64_t rows, const void* t, const void* e, void* out,
                       int64_t n, cudaStream_t stream) {
  SelectKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      cond, rows, static_cast<const Word*>(t), static_cast<const Word*>(e), static_cast<Word*>(out),
      n);
}

}  // namespace

void LaunchCast(CastType from, CastType to, const void* x, void* y, int64_t n,
                cudaStream_t stream) {
  if (n == 0) return;
  switch (from) {
    case CastType::kFloat:
      return LaunchCastFrom(to, static_cast<const float*>(x), y, n, stream);
    case CastType::kDouble:
      return LaunchCastFrom(to, static_cast<const double*>(x), y, n, stream);
    case CastType::kInt64:
      return LaunchCastFrom(to, static_cast<const int64_t*>(x), y, n, stream);
    case CastType::kBool:
      return LaunchCastFrom(to, static_cast<const bool*>(x), y, n, stream);
    case CastType::kHalf:
      return LaunchCastFrom(to, static_cast<const Half*>(x), y, n, stream);
  }
}

void LaunchFill(int bytes, void* out, int64_t n, const void* value, uint64_t bits,
                cudaStream_t stream) {
  if (n == 0) return;
  switch (bytes) {
    case 1:
      return LaunchFillWords<uint8_t>(out, n, value, bits, stream);
    case 2:
      return LaunchFillWords<uint16_t>(out, n, value, bits, stream);
    case 4:
      return LaunchFillWords<uint32_t>(out, n, value, bits, stream);
    default:
      return LaunchFillWords<uint64_t>(out, n, value, bits, stream);
  }
}

void LaunchSelect(int bytes, const bool* cond, int64_t rows, const void* t, const void* e,
                  void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  switch (bytes) {
    case 1:
      return LaunchSelectWords<uint8_t>(cond, rows, t, e, out, n, stream);
    case 4:
      return LaunchSelectWords<uint32_t>(cond, rows, t, e, out, n, stream);
    default:
      return LaunchSelectWords<uint64_t>(cond, rows, t, e, out, n, stream);
  }
}

}  // namespace rill::cuda
