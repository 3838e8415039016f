#include "tests/kernels/device/device_table.h"

#include <memory>
#include <random>

#include "gtest/gtest.h"
#include "kernels/framework/cpu_threads.h"
#include "runtime/device/device_query.h"
#include "runtime/device/gpu_devices.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

constexpr char kTask[] = "/job:localhost/replica:0/task:0";

// The process's GPUs, made once: two virtual devices per physical GPU, so
// that a case also runs on a second stream and memory pool of the same GPU.
struct Gpus {
  std::vector<std::unique_ptr<Device>> devices;
  std::string why_none;
};
const Gpus& TestGpus() {
  static const Gpus* const gpus = [] {
    auto* g = new Gpus;
    const GpuQuery query = QueryGpuDevices();
    if (query.devices.empty()) {
      g->why_none = query.reason;
      return g;
    }
    GpuOptions options;
    options.virtual_devices_per_gpu = 2;
    options.memory_limit_bytes = int64_t{2} << 30;
    absl::StatusOr<std::vector<std::unique_ptr<Device>>> made =
        CreateGpuDevices(kTask, 64, std::make_shared<CpuThreads>(2), options);
    if (!made.ok()) {
      g->why_none = std::string(made.status().message());
    } else {
      g->devices = *std::move(made);
      if (g->devices.empty()) g->why_none = "the process made no GPU device";
    }
    return g;
  }();
  return *gpus;
}

// The tester for `c` on `device_type`, with fresh copies of its variables
// (returned through `vars`, in argument order).
KernelTester MakeTester(const DeviceCase& c, const std::string& device_type,
                        std::vector<std::unique_ptr<Tensor>>* vars) {
  KernelTester t(c.op, device_type);
  for (const auto& [name, value] : c.attrs) t.Attr(name, value);
  for (const CaseArg& arg : c.args) {
    if (arg.is_ref) {
      vars->push_back(std::make_unique<Tensor>(arg.values.at(0).DeepCopy()));
      t.RefInput(vars->back().get());
    } else if (arg.is_list) {
      t.InputList(arg.values);
    } else {
      t.Input(arg.values.at(0));
    }
  }
  return t;
}

void ExpectSame(const DeviceCase& c, const std::string& what, const Tensor& cpu,
                const Tensor& gpu) {
  if (c.random_output) {
    EXPECT_EQ(gpu.dtype(), cpu.dtype()) << what;
    EXPECT_EQ(gpu.shape(), cpu.shape()) << what;
    for (int64_t i = 0; i < gpu.NumElements(); ++i) {
      double v = 0;
      switch (gpu.dtype()) {
        case DT_DOUBLE:
          v = gpu.data<double>()[i];
          break;
        case DT_HALF:
          v = static_cast<float>(gpu.data<half>()[i]);
          break;
        case DT_BFLOAT16:
          v = static_cast<float>(gpu.data<bfloat16>()[i]);
          break;
        default:
          v = gpu.data<float>()[i];
      }
      ASSERT_TRUE(v >= c.low && v <= c.high) << what << ": element " << i << " is " << v
                                             << ", outside [" << c.low << ", " << c.high << "]";
    }
    return;
  }
  EXPECT_THAT(gpu, TensorNear(cpu, c.atol, c.rtol)) << what;
}

}  // namespace

CaseArg In(Tensor value) { return CaseArg{{std::move(value)}, false, false}; }
CaseArg List(std::vector<Tensor> values) { return CaseArg{std::move(values), true, false}; }
CaseArg Ref(Tensor initial) { return CaseArg{{std::move(initial)}, false, true}; }

Tensor Random(DataType dtype, const TensorShape& shape, int seed, double low, double high) {
  Tensor t = RandomTensor(dtype, shape, seed, low, high);
  if (dtype == DT_FLOAT) {
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if (t.data<float>()[i] == 0.0f) t.data<float>()[i] = 0.5f * static_cast<float>(low + high);
    }
  } else if (dtype == DT_DOUBLE) {
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if (t.data<double>()[i] == 0.0) t.data<double>()[i] = 0.5 * (low + high);
    }
  }
  return t;
}

Tensor RandomInts(DataType dtype, const TensorShape& shape, int seed, int64_t low, int64_t high) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(low, high - 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == DT_INT32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(dist(rng));
    } else {
      t.data<int64_t>()[i] = dist(rng);
    }
  }
  return t;
}

Tensor Int32s(std::vector<int32_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<int32_t>(absl::MakeConstSpan(values), TensorShape({n}));
}

Tensor ScalarOf(DataType dtype, double v) {
  switch (dtype) {
    case DT_FLOAT:
      return Tensor::Scalar<float>(static_cast<float>(v));
    case DT_DOUBLE:
      return Tensor::Scalar<double>(v);
    case DT_INT64:
      return Tensor::Scalar<int64_t>(static_cast<int64_t>(v));
    case DT_HALF:
      return Tensor::Scalar<half>(static_cast<half>(v));
    default:
      return Tensor::Scalar<bool>(v != 0);
  }
}

Tensor Filled(DataType dtype, const TensorShape& shape, double v) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    switch (dtype) {
      case DT_FLOAT:
        t.data<float>()[i] = static_cast<float>(v);
        break;
      case DT_DOUBLE:
        t.data<double>()[i] = v;
        break;
      case DT_HALF:
        t.data<half>()[i] = static_cast<half>(v);
        break;
      case DT_INT32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DT_INT64:
        t.data<int64_t>()[i] = static_cast<int64_t>(v);
        break;
      default:
        t.data<bool>()[i] = v != 0;
        break;
    }
  }
  return t;
}

void RunOnEveryDevice(const DeviceCase& c) {
  std::vector<std::unique_ptr<Tensor>> cpu_vars;
  const KernelTester cpu_tester = MakeTester(c, kDeviceCpu, &cpu_vars);
  ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> cpu, cpu_tester.Run());
  if (!c.expected.empty()) {
    ASSERT_EQ(cpu.size(), c.expected.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_THAT(cpu[i], TensorNear(c.expected[i], c.atol, c.rtol))
          << "CPU output " << i << " against TensorFlow's";
    }
  }

  const Gpus& gpus = TestGpus();
  if (gpus.devices.empty()) GTEST_SKIP() << "no GPU to run " << c.op << " on: " << gpus.why_none;
  for (const std::unique_ptr<Device>& device : gpus.devices) {
    SCOPED_TRACE(device->name());
    std::vector<std::unique_ptr<Tensor>> gpu_vars;
    KernelTester gpu_tester = MakeTester(c, kDeviceGpu, &gpu_vars);
    gpu_tester.OnDevice(device->allocator(), device->device_context());
    ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> gpu, gpu_tester.Run());
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      ExpectSame(c, "output " + std::to_string(i), cpu[i], gpu[i]);
    }
    for (size_t v = 0; v < cpu_vars.size(); ++v) {
      ExpectSame(c, "variable " + std::to_string(v), *cpu_vars[v], *gpu_vars[v]);
    }
  }
}

std::vector<std::string> OpsOf(const std::vector<DeviceCase>& cases) {
  std::vector<std::string> ops;
  for (const DeviceCase& c : cases) ops.push_back(c.op);
  return ops;
}

}  // namespace rill::testing
