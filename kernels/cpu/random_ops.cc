// CPU kernels for RandomUniform, RandomStandardNormal and TruncatedNormal,
// seeded as TensorFlow seeds them (kernels/common/random_util.h).
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/random_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Uniform in [0, 1) with as many random bits as T's significand holds, so
// that rounding to T can never produce 1.
template <typename T>
T UniformUnit(std::mt19937_64& gen) {
  constexpr int kBits = std::min(std::numeric_limits<T>::digits, 53);
  const uint64_t bits = gen() >> (64 - kBits);
  return static_cast<T>(std::ldexp(static_cast<double>(bits), -kBits));
}

// Box-Muller: two independent standard normals from two uniforms.
std::pair<double, double> NormalPair(std::mt19937_64& gen) {
  const double u1 = 1.0 - UniformUnit<double>(gen);  // (0, 1]: log is finite.
  const double u2 = UniformUnit<double>(gen);
  const double r = std::sqrt(-2.0 * std::log(u1));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return {r * std::cos(kTwoPi * u2), r * std::sin(kTwoPi * u2)};
}

// Thread safety: Compute may run concurrently (overlapping steps); each call
// draws its whole tensor under mu_, so every call gets a disjoint, ordered
// part of the generator's sequence.
template <typename T, Distribution kDist>
class RandomOp final : public OpKernel {
 public:
  RandomOp(const OpKernelConstruction& c, uint64_t seed) : OpKernel(c), gen_(seed) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(uint64_t state, rng::SeedFromAttrs(c.def()));
    return std::unique_ptr<OpKernel>(std::make_unique<RandomOp>(c, state));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(TensorShape shape, rng::OutputShape(ctx.input(0), op()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    T* data = out->data<T>();
    const int64_t n = out->NumElements();
    absl::MutexLock lock(&mu_);
    if constexpr (kDist == Distribution::kUniform) {
      for (int64_t i = 0; i < n; ++i) data[i] = UniformUnit<T>(gen_);
    } else {
      int64_t i = 0;
      while (i < n) {
        const auto [a, b] = NormalPair(gen_);
        for (double z : {a, b}) {
          if (i == n) break;
          if (kDist == Distribution::kTruncatedNormal && std::abs(z) > 2.0) continue;
          data[i++] = static_cast<T>(z);
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  mutable absl::Mutex mu_;
  mutable std::mt19937_64 gen_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
void RegisterRandomKernels(KernelRegistry& r) {
  r.Register(KernelDef("RandomUniform").Device(kDeviceCpu).TypeConstraint<T>("dtype"),
             RandomOp<T, Distribution::kUniform>::Create);
  r.Register(KernelDef("RandomStandardNormal").Device(kDeviceCpu).TypeConstraint<T>("dtype"),
             RandomOp<T, Distribution::kNormal>::Create);
  r.Register(KernelDef("TruncatedNormal").Device(kDeviceCpu).TypeConstraint<T>("dtype"),
             RandomOp<T, Distribution::kTruncatedNormal>::Create);
}

}  // namespace

void RegisterCpuRandomKernels(KernelRegistry& r) {
  RegisterRandomKernels<float>(r);
  RegisterRandomKernels<double>(r);
  RegisterRandomKernels<half>(r);
  RegisterRandomKernels<bfloat16>(r);
}

}  // namespace rill
