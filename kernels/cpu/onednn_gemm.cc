#include "kernels/cpu/onednn_gemm.h"

#ifdef RILL_HAVE_DNNL
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "oneapi/dnnl/dnnl.h"
#endif

namespace rill {

#ifdef RILL_HAVE_DNNL

namespace {

// Thresholds measured with benches/kernel_bench on a 2-core AVX-512 machine
// (benches/README.md). oneDNN's fixed cost per call loses to Eigen below
// about 24^3 multiply-adds, and on a single output row (a vector-matrix
// product) at any size.
constexpr int64_t kMinVolume = int64_t{1} << 14;
constexpr int64_t kMinRows = 2;
// A share handed to another pool thread must outweigh the time it takes
// to wake that thread (some 30 us on a virtual machine): the MLP products
// of 2^22.6 multiply-adds gained under 10% from a second thread.
constexpr int64_t kMinShareVolume = int64_t{1} << 23;

struct Gemm {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  const float* a;
  const float* b;
  float* out;
  bool accumulate;
};

// Rows [row_begin, row_end) and columns [col_begin, col_end) of out: the
// operands' leading dimensions stay those of the whole matrices.
struct Block {
  int64_t row_begin, row_end, col_begin, col_end;
};

dnnl_status_t Multiply(const Gemm& g, const Block& block) {
  // oneDNN's OpenMP team would be a second thread pool contending with the
  // intra-op pool for the same cores, so oneDNN runs on one thread here and
  // the intra-op pool provides the parallelism. The setting belongs to the
  // calling thread only.
  omp_set_num_threads(1);
  if (block.row_begin == block.row_end || block.col_begin == block.col_end) return dnnl_success;
  const float* a = g.transpose_a ? g.a + block.row_begin : g.a + block.row_begin * g.k;
  const float* b = g.transpose_b ? g.b + block.col_begin * g.k : g.b + block.col_begin;
  return dnnl_sgemm(g.transpose_a ? 'T' : 'N', g.transpose_b ? 'T' : 'N',
                    block.row_end - block.row_begin, block.col_end - block.col_begin, g.k, 1.f, a,
                    g.transpose_a ? g.m : g.k, b, g.transpose_b ? g.k : g.n,
                    g.accumulate ? 1.f : 0.f, g.out + block.row_begin * g.n + block.col_begin, g.n);
}

// Share `index` of `shares` equal shares of the longer side of out, in
// multiples of `align` (a vector width of columns, a few rows).
Block ShareOf(const Gemm& g, int index, int shares) {
  const bool by_rows = g.m >= g.n;
  const int64_t extent = by_rows ? g.m : g.n;
  const int64_t align = by_rows ? 8 : 16;
  const int64_t size = ((extent + shares - 1) / shares + align - 1) / align * align;
  const int64_t begin = std::min(extent, index * size);
  const int64_t end = std::min(extent, begin + size);
  return by_rows ? Block{begin, end, 0, g.n} : Block{0, g.m, begin, end};
}

// The shares of one product, taken by whichever thread asks first: the
// caller works through them too, so it never waits for a pool thread that
// has not started (busy, or descheduled on a loaded machine), only for
// shares already under way. Owned jointly by the caller and the pool tasks,
// as a task may start after the caller has returned.
struct SharedProduct {
  SharedProduct(const Gemm& gemm, int shares)
      : g(gemm), status(shares, dnnl_success), done(static_cast<unsigned>(shares)) {}

  void Work() {
    // relaxed: the counter only hands out indices; results are published
    // by the barrier.
    for (int i;
         (i = next.fetch_add(1, std::memory_order_relaxed)) < static_cast<int>(status.size());) {
      status[i] = Multiply(g, ShareOf(g, i, static_cast<int>(status.size())));
      done.Notify();
    }
  }

  const Gemm g;
  std::vector<dnnl_status_t> status;
  std::atomic<int> next{0};
  Eigen::Barrier done;
};

}  // namespace

bool HaveOneDnn() { return true; }

bool PreferOneDnnSgemm(int64_t m, int64_t n, int64_t k) {
  return m >= kMinRows && m * n * k >= kMinVolume;
}

absl::Status OneDnnSgemm(const Eigen::ThreadPoolDevice& d, bool transpose_a, bool transpose_b,
                         int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         float* out, bool accumulate) {
  const Gemm g{transpose_a, transpose_b, m, n, k, a, b, out, accumulate};
  const int shares =
      static_cast<int>(std::clamp<int64_t>(m * n * k / kMinShareVolume, 1, d.numThreads()));
  std::vector<dnnl_status_t> status;
  if (shares == 1) {
    status.push_back(Multiply(g, ShareOf(g, 0, 1)));
  } else {
    const auto product = std::make_shared<SharedProduct>(g, shares);
    for (int i = 1; i < shares; ++i) d.enqueueNoNotification([product] { product->Work(); });
    product->Work();
    product->done.Wait();
    status = product->status;
  }
  for (dnnl_status_t s : status) {
    if (s != dnnl_success) {
      return absl::InternalError(
          absl::StrFormat("oneDNN sgemm failed (status %d) for [%d,%d] x [%d,%d]",
                          static_cast<int>(s), m, k, k, n));
    }
  }
  return absl::OkStatus();
}

#else

bool HaveOneDnn() { return false; }

bool PreferOneDnnSgemm(int64_t, int64_t, int64_t) { return false; }

absl::Status OneDnnSgemm(const Eigen::ThreadPoolDevice&, bool, bool, int64_t, int64_t, int64_t,
                         const float*, const float*, float*, bool) {
  return absl::UnimplementedError("this build has no oneDNN");
}

#endif

}  // namespace rill
