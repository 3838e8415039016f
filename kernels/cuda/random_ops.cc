// GPU kernels for RandomUniform, RandomStandardNormal and TruncatedNormal
// (float and double) through cuRAND's Philox generator, seeded from the
// seed and seed2 attrs as the CPU kernels are (kernels/common/random_util.h).
// The CPU and GPU draw different numbers from the same distributions.
#include <curand.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/random_util.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/random_kernels.h"

namespace rill {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

absl::Status CurandResult(curandStatus_t status, std::string_view what) {
  if (status == CURAND_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("%s: cuRAND error %d", what, static_cast<int>(status)));
}

// Thread safety: Compute may run concurrently (overlapping steps); each call
// queues its whole tensor's draw under mu_, so every call gets a disjoint,
// ordered part of the generator's sequence. The generator is made by the
// first run, on the GPU it runs on, and every later run must be on that GPU.
template <typename T, Distribution kDist>
class RandomGpu final : public OpKernel {
 public:
  RandomGpu(const OpKernelConstruction& c, uint64_t seed) : OpKernel(c), seed_(seed) {}

  ~RandomGpu() override {
    absl::MutexLock lock(&mu_);
    if (generator_ != nullptr) {
      // The generator's state lives on its GPU.
      cudaSetDevice(ordinal_);
      curandDestroyGenerator(generator_);
    }
  }

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(uint64_t seed, rng::SeedFromAttrs(c.def()));
    return std::unique_ptr<OpKernel>(std::make_unique<RandomGpu>(c, seed));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(TensorShape shape, rng::OutputShape(ctx.input(0), op()));
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    const int64_t n = out->NumElements();
    if (n == 0) return absl::OkStatus();
    const std::string what = ctx.node().name() + ": cuRAND";
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(PrepareGenerator(*gpu, what));
    T* data = out->data<T>();
    if constexpr (kDist == Distribution::kUniform) {
      // Raw bits rather than curandGenerateUniform, whose (0, 1] would
      // differ from TensorFlow's [0, 1).
      const int64_t words = std::is_same_v<T, float> ? n : 2 * n;
      ASSIGN_OR_RETURN(Tensor bits, ctx.AllocateTemp(DT_INT64, TensorShape({(words + 1) / 2})));
      auto* bits_data = static_cast<uint32_t*>(bits.raw_data());
      RETURN_IF_ERROR(CurandResult(curandGenerate(generator_, bits_data, words), what));
      cuda::LaunchUniformFromBits<T>(bits_data, data, n, gpu->compute_stream());
      return CheckLaunch(ctx, "uniform from random bits");
    } else if constexpr (kDist == Distribution::kNormal) {
      // Box-Muller makes normals in pairs: an odd count is drawn one
      // longer into a temporary.
      Tensor padded;
      T* target = data;
      if (n % 2 != 0) {
        ASSIGN_OR_RETURN(padded, ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({n + 1})));
        target = padded.data<T>();
      }
      const int64_t count = n + n % 2;
      if constexpr (std::is_same_v<T, float>) {
        RETURN_IF_ERROR(
            CurandResult(curandGenerateNormal(generator_, target, count, 0.0f, 1.0f), what));
      } else {
        RETURN_IF_ERROR(
            CurandResult(curandGenerateNormalDouble(generator_, target, count, 0.0, 1.0), what));
      }
      if (target == data) return absl::OkStatus();
      return gpu->CopyWithinDevice(target, data, n * sizeof(T));
    } else {
      if constexpr (std::is_same_v<T, float>) {
        RETURN_IF_ERROR(CurandResult(curandGenerateUniform(generator_, data, n), what));
      } else {
        RETURN_IF_ERROR(CurandResult(curandGenerateUniformDouble(generator_, data, n), what));
      }
      cuda::LaunchTruncatedNormalFromUniform<T>(data, n, gpu->compute_stream());
      return CheckLaunch(ctx, "truncated normal from uniforms");
    }
  }

 private:
  // Makes the generator on the first run and points it at this run's
  // stream.
  absl::Status PrepareGenerator(GpuDeviceContext& gpu, const std::string& what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (generator_ == nullptr) {
      curandGenerator_t generator;
      RETURN_IF_ERROR(
          CurandResult(curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10), what));
      if (absl::Status s = CurandResult(curandSetPseudoRandomGeneratorSeed(generator, seed_), what);
          !s.ok()) {
        curandDestroyGenerator(generator);
        return s;
      }
      generator_ = generator;
      ordinal_ = gpu.ordinal();
    } else if (ordinal_ != gpu.ordinal()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: the kernel's generator is on GPU %d, not %d", what, ordinal_, gpu.ordinal()));
    }
    return CurandResult(curandSetStream(generator_, gpu.compute_stream()), what);
  }

  const uint64_t seed_;
  mutable absl::Mutex mu_;
  mutable curandGenerator_t generator_ ABSL_GUARDED_BY(mu_) = nullptr;
  mutable int ordinal_ ABSL_GUARDED_BY(mu_) = -1;
};

template <typename T>
void RegisterRandomKernels(KernelRegistry& r) {
  // The shape as int32, which stays in host memory; an int64 shape would
  // be on the GPU, and such nodes run on the CPU.
  const auto def = [](const char* op) {
    return KernelDef(op)
        .Device(kDeviceGpu)
        .TypeConstraint<T>("dtype")
        .template TypeConstraint<int32_t>("T");
  };
  r.Register(def("RandomUniform"), RandomGpu<T, Distribution::kUniform>::Create);
  r.Register(def("RandomStandardNormal"), RandomGpu<T, Distribution::kNormal>::Create);
  r.Register(def("TruncatedNormal"), RandomGpu<T, Distribution::kTruncatedNormal>::Create);
}

}  // namespace

// float and double; the CPU's half and bfloat16 draws stay on the CPU.
void RegisterGpuRandomKernels(KernelRegistry& registry) {
  RegisterRandomKernels<float>(registry);
  RegisterRandomKernels<double>(registry);
}

}  // namespace rill
