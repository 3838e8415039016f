// CUDA kernels that move elements around: one strided copy (Transpose,
// Slice, StridedSlice, Tile, Concat, Split, Pack, Unpack), a gather and a
// one-hot encoder. Each is instantiated per element size, not per type.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/transform_kernels.h"

namespace rill::cuda {
namespace {

// Elements as opaque words of their size: 16 bytes move as one vector.
template <int kSize>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = unsigned long long;  // NOLINT(runtime/int): CUDA's 64-bit word.
};
template <>
struct Word<16> {
  using type = uint4;
};

// Returns launch(W{}) for W the word of `size` bytes (1, 2, 4, 8 or 16).
template <typename Launch>
cudaError_t WithWord(int size, const Launch& launch) {
  switch (size) {
    case 1:
      return launch(Word<1>::type{});
    case 2:
      return launch(Word<2>::type{});
    case 4:
      return launch(Word<4>::type{});
    case 8:
      return launch(Word<8>::type{});
    case 16:
      return launch(Word<16>::type{});
    default:
      return cudaErrorInvalidValue;
  }
}

// A copy of at most kMaxDims nested loops, passed by value to the kernel.
constexpr int kMaxDims = 12;
struct CopyLoops {
  int rank;
  int64_t dims[kMaxDims];
  int64_t src_strides[kMaxDims];
  int64_t dst_strides[kMaxDims];
};

// One thread per element: the element's index is split into loop indices
// from the innermost loop out. `I` is int32_t where every offset fits,
// whose division is several times cheaper than int64_t's.
template <typename E, typename I>
__global__ void StridedCopyKernel(const E* __restrict__ src, E* __restrict__ dst, CopyLoops c,
                                  I n) {
  const I step = static_cast<I>(blockDim.x) * static_cast<I>(gridDim.x);
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
       i < n; i += step) {
    I rest = i;
    I s = 0;
    I d = 0;
    for (int k = c.rank - 1; k > 0; --k) {
      const I dim = static_cast<I>(c.dims[k]);
      const I q = rest / dim;
      const I p = rest - q * dim;
      s += p * static_cast<I>(c.src_strides[k]);
      d += p * static_cast<I>(c.dst_strides[k]);
      rest = q;
    }
    s += rest * static_cast<I>(c.src_strides[0]);
    d += rest * static_cast<I>(c.dst_strides[0]);
    dst[d] = src[s];
  }
}

struct Loop {
  int64_t dim, src_stride, dst_stride;
};

// The same copy with size-1 loops dropped and neighbours that are
// contiguous in both src and dst merged into one loop.
std::vector<Loop> Merge(int rank, const int64_t* dims, const int64_t* src_strides,
                        const int64_t* dst_strides) {
  std::vector<Loop> loops;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] == 1) continue;
    const Loop inner{dims[i], src_strides[i], dst_strides[i]};
    if (!loops.empty()) {
      Loop& outer = loops.back();
      if (outer.src_stride == inner.src_stride * inner.dim &&
          outer.dst_stride == inner.dst_stride * inner.dim) {
        outer = Loop{outer.dim * inner.dim, inner.src_stride, inner.dst_stride};
        continue;
      }
    }
    loops.push_back(inner);
  }
  if (loops.empty()) loops.push_back(Loop{1, 1, 1});
  return loops;
}

bool AlignedTo(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// Moves pairs of elements as one of twice the size while the innermost
// loop is contiguous on both sides, so that narrow types copy in wide
// words.
void Widen(std::vector<Loop>& loops, int& element_size, const void* src, const void* dst) {
  while (element_size < 16) {
    Loop& last = loops.back();
    if (last.src_stride != 1 || last.dst_stride != 1 || last.dim % 2 != 0) return;
    for (size_t i = 0; i + 1 < loops.size(); ++i) {
      if (loops[i].src_stride % 2 != 0 || loops[i].dst_stride % 2 != 0) return;
    }
    if (!AlignedTo(src, 2 * element_size) || !AlignedTo(dst, 2 * element_size)) return;
    last.dim /= 2;
    for (size_t i = 0; i + 1 < loops.size(); ++i) {
      loops[i].src_stride /= 2;
      loops[i].dst_stride /= 2;
    }
    element_size *= 2;
  }
}

// Loops of one iteration left by Widen.
void DropUnitLoops(std::vector<Loop>& loops) {
  std::vector<Loop> kept;
  for (const Loop& l : loops) {
    if (l.dim != 1) kept.push_back(l);
  }
  if (kept.empty()) kept.push_back(Loop{1, 1, 1});
  loops = std::move(kept);
}

template <typename E>
cudaError_t LaunchLoops(const void* src, void* dst, const CopyLoops& c, int64_t n, int64_t extent,
                        cudaStream_t stream) {
  const E* s = static_cast<const E*>(src);
  E* d = static_cast<E*>(dst);
  // Headroom for the grid-stride step past n.
  constexpr int64_t kSmall = int64_t{1} << 30;
  if (n < kSmall && extent < kSmall) {
    StridedCopyKernel<E, int32_t>
        <<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(s, d, c, static_cast<int32_t>(n));
  } else {
    StridedCopyKernel<E, int64_t><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(s, d, c, n);
  }
  return cudaGetLastError();
}

cudaError_t LaunchMerged(const char* src, char* dst, int element_size,
                         const std::vector<Loop>& loops, size_t first, cudaStream_t stream) {
  const size_t rank = loops.size() - first;
  if (rank > static_cast<size_t>(kMaxDims)) {
    // More loops than a kernel takes (a rare transpose of a high-rank
    // tensor): the outermost one runs here.
    const Loop& outer = loops[first];
    for (int64_t p = 0; p < outer.dim; ++p) {
      const cudaError_t e = LaunchMerged(src + p * outer.src_stride * element_size,
                                         dst + p * outer.dst_stride * element_size, element_size,
                                         loops, first + 1, stream);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  CopyLoops c{};
  c.rank = static_cast<int>(rank);
  int64_t n = 1;
  int64_t extent = 0;
  for (size_t i = 0; i < rank; ++i) {
    const Loop& l = loops[first + i];
    c.dims[i] = l.dim;
    c.src_strides[i] = l.src_stride;
    c.dst_strides[i] = l.dst_stride;
    n *= l.dim;
    extent += (l.dim - 1) * (std::llabs(l.src_stride) + std::llabs(l.dst_stride));
  }
  if (rank == 1 && c.src_strides[0] == 1 && c.dst_strides[0] == 1) {
    return cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * element_size,
                           cudaMemcpyDeviceToDevice, stream);
  }
  return WithWord(element_size,
                  [&]<typename W>(W) { return LaunchLoops<W>(src, dst, c, n, extent, stream); });
}

template <typename E, typename Idx>
__global__ void GatherKernel(const E* __restrict__ params, const Idx* __restrict__ indices,
                             E* __restrict__ out, int64_t bound, int64_t n, int64_t inner,
                             int64_t total) {
  RILL_GRID_LOOP(i, total) {
    const int64_t k = i % inner;
    const int64_t row = i / inner;  // o * n + j
    const int64_t j = row % n;
    const int64_t o = row / n;
    const int64_t index = static_cast<int64_t>(indices[j]);
    out[i] = index >= 0 && index < bound ? params[(o * bound + index) * inner + k] : E{};
  }
}

template <typename E>
cudaError_t LaunchGatherOf(const void* params, const void* indices, bool int64, void* out,
                           int64_t bound, int64_t n, int64_t inner, int64_t total,
                           cudaStream_t stream) {
  const E* p = static_cast<const E*>(params);
  E* o = static_cast<E*>(out);
  if (int64) {
    GatherKernel<<<BlocksFor(total), kThreadsPerBlock, 0, stream>>>(
        p, static_cast<const int64_t*>(indices), o, bound, n, inner, total);
  } else {
    GatherKernel<<<BlocksFor(total), kThreadsPerBlock, 0, stream>>>(
        p, static_cast<const int32_t*>(indices), o, bound, n, inner, total);
  }
  return cudaGetLastError();
}

template <typename E, typename Idx>
__global__ void OneHotKernel(const Idx* __restrict__ indices, const E* __restrict__ on,
                             const E* __restrict__ off, E* __restrict__ out, int64_t depth,
                             int64_t inner, int64_t total) {
  const E on_value = *on;
  const E off_value = *off;
  RILL_GRID_LOOP(i, total) {
    const int64_t k = i % inner;
    const int64_t row = i / inner;  // o * depth + d
    const int64_t d = row % depth;
    const int64_t o = row / depth;
    out[i] = static_cast<int64_t>(indices[o * inner + k]) == d ? on_value : off_value;
  }
}

template <typename E>
cudaError_t LaunchOneHotOf(const void* indices, bool int64, const void* on, const void* off,
                           void* out, int64_t depth, int64_t inner, int64_t total,
                           cudaStream_t stream) {
  const E* on_e = static_cast<const E*>(on);
  const E* off_e = static_cast<const E*>(off);
  E* o = static_cast<E*>(out);
  if (int64) {
    OneHotKernel<<<BlocksFor(total), kThreadsPerBlock, 0, stream>>>(
        static_cast<const int64_t*>(indices), on_e, off_e, o, depth, inner, total);
  } else {
    OneHotKernel<<<BlocksFor(total), kThreadsPerBlock, 0, stream>>>(
        static_cast<const int32_t*>(indices), on_e, off_e, o, depth, inner, total);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchStridedCopy(const void* src, void* dst, int element_size, int rank,
                              const int64_t* dims, const int64_t* src_strides,
                              const int64_t* dst_strides, cudaStream_t stream) {
  for (int i = 0; i < rank; ++i) {
    if (dims[i] == 0) return cudaSuccess;
  }
  std::vector<Loop> loops = Merge(rank, dims, src_strides, dst_strides);
  Widen(loops, element_size, src, dst);
  DropUnitLoops(loops);
  return LaunchMerged(static_cast<const char*>(src), static_cast<char*>(dst), element_size, loops,
                      0, stream);
}

cudaError_t LaunchGather(const void* params, const void* indices, bool indices_are_int64, void* out,
                         int element_size, int64_t outer, int64_t bound, int64_t n, int64_t inner,
                         cudaStream_t stream) {
  // Rows of `inner` elements move in the widest words that divide them.
  while (element_size < 16 && inner % 2 == 0 && AlignedTo(params, 2 * element_size) &&
         AlignedTo(out, 2 * element_size)) {
    inner /= 2;
    element_size *= 2;
  }
  const int64_t total = outer * n * inner;
  if (total == 0) return cudaSuccess;
  return WithWord(element_size, [&]<typename W>(W) {
    return LaunchGatherOf<W>(params, indices, indices_are_int64, out, bound, n, inner, total,
                             stream);
  });
}

cudaError_t LaunchOneHot(const void* indices, bool indices_are_int64, const void* on,
                         const void* off, void* out, int element_size, int64_t outer, int64_t depth,
                         int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * depth * inner;
  if (total == 0) return cudaSuccess;
  return WithWord(element_size, [&]<typename W>(W) {
    return LaunchOneHotOf<W>(indices, indices_are_int64, on, off, out, depth, inner, total, stream);
  });
}

}  // namespace rill::cuda
