// CPU kernels of the padding ops: Pad and PadV2 (a constant border),
// MirrorPad (REFLECT, SYMMETRIC) and MirrorPadGrad, which folds a mirrored
// border's gradient back onto the input it came from.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// The paddings input, checked against the input's rank: before and after
// for each dimension, in order.
absl::StatusOr<std::vector<int64_t>> ReadPaddings(const char* op, const Tensor& input,
                                                  const Tensor& paddings) {
  if (paddings.dims() != 2 || paddings.dim_size(0) != input.dims() || paddings.dim_size(1) != 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: paddings must be [%d, 2] for an input of shape %s, got shape %s", op,
                        input.dims(), input.shape().DebugString(), paddings.shape().DebugString()));
  }
  std::vector<int64_t> pads(static_cast<size_t>(paddings.NumElements()));
  for (size_t i = 0; i < pads.size(); ++i) {
    pads[i] =
        paddings.dtype() == DT_INT64 ? paddings.data<int64_t>()[i] : paddings.data<int32_t>()[i];
    if (pads[i] < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: paddings must be non-negative, got %d at [%d, %d]", op, pads[i], i / 2, i % 2));
    }
  }
  return pads;
}

// Row-major strides of `shape`, in elements.
std::vector<int64_t> StridesOf(const TensorShape& shape) {
  std::vector<int64_t> strides(static_cast<size_t>(shape.dims()), 1);
  for (int d = shape.dims() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dim_size(d + 1);
  return strides;
}

// Calls f(flat index, multi-index) for every element of `shape`, in order.
template <typename F>
void ForEachIndex(const TensorShape& shape, F f) {
  const int64_t n = shape.num_elements();
  std::vector<int64_t> index(static_cast<size_t>(shape.dims()), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(flat, index);
    for (int d = shape.dims() - 1; d >= 0; --d) {
      if (++index[d] < shape.dim_size(d)) break;
      index[d] = 0;
    }
  }
}

// Pad and PadV2: the output is filled with the constant, then each input
// row is copied to its place.
template <typename T>
class PadOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const char* op = ctx.num_inputs() == 3 ? "PadV2" : "Pad";
    ASSIGN_OR_RETURN(const std::vector<int64_t> pads, ReadPaddings(op, input, ctx.input(1)));
    T value{};
    if (ctx.num_inputs() == 3) {
      const Tensor& constant = ctx.input(2);
      if (constant.dims() != 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("PadV2: constant_values must be a scalar, got shape %s",
                            constant.shape().DebugString()));
      }
      value = constant.data<T>()[0];
    }
    TensorShape out_shape = input.shape();
    for (int d = 0; d < input.dims(); ++d) {
      out_shape.set_dim(d, input.dim_size(d) + pads[2 * d] + pads[2 * d + 1]);
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, out_shape));
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), value);
    if (input.NumElements() == 0) return absl::OkStatus();
    if (input.dims() == 0) {
      dst[0] = input.data<T>()[0];
      return absl::OkStatus();
    }
    const int last = input.dims() - 1;
    const int64_t row = input.dim_size(last);
    const std::vector<int64_t> out_strides = StridesOf(out_shape);
    TensorShape rows_shape = input.shape();
    rows_shape.set_dim(last, 1);
    const T* src = input.data<T>();
    ForEachIndex(rows_shape, [&](int64_t r, const std::vector<int64_t>& index) {
      int64_t at = pads[2 * last];
      for (int d = 0; d < last; ++d) at += (index[d] + pads[2 * d]) * out_strides[d];
      std::copy_n(src + r * row, row, dst + at);
    });
    return absl::OkStatus();
  }
};

// Where each output coordinate of a dimension of size `n` padded by
// `before` reads from: the border mirrors the input, with (SYMMETRIC) or
// without (REFLECT) the edge itself.
std::vector<int64_t> MirrorMap(int64_t n, int64_t before, int64_t out_size, bool reflect) {
  const int64_t offset = reflect ? 1 : 0;
  std::vector<int64_t> map(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    int64_t j = i - before;
    if (j < 0) j = -j - 1 + offset;
    if (j >= n) j = 2 * n - 1 - j - offset;
    map[i] = j;
  }
  return map;
}

absl::StatusOr<bool> ReadMode(const OpKernelConstruction& c) {
  ASSIGN_OR_RETURN(const std::string mode, GetStringAttr(c.def(), "mode"));
  if (mode != "REFLECT" && mode != "SYMMETRIC") {
    return absl::InvalidArgumentError(
        absl::StrFormat("mode must be REFLECT or SYMMETRIC, got '%s'", mode));
  }
  return mode == "REFLECT";
}

// The per-dimension maps of a mirrored pad from `small` to `large`, after
// checking that no border is wider than the input allows (REFLECT: the
// dimension less one, SYMMETRIC: the dimension).
absl::StatusOr<std::vector<std::vector<int64_t>>> MirrorMaps(const char* op,
                                                             const TensorShape& small,
                                                             const std::vector<int64_t>& pads,
                                                             bool reflect) {
  std::vector<std::vector<int64_t>> maps;
  for (int d = 0; d < small.dims(); ++d) {
    const int64_t n = small.dim_size(d);
    const int64_t limit = reflect ? n - 1 : n;
    if (pads[2 * d] > limit || pads[2 * d + 1] > limit) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: paddings [%d, %d] of dimension %d must be at most %d in %s mode (its size is %d)",
          op, pads[2 * d], pads[2 * d + 1], d, std::max<int64_t>(limit, 0),
          reflect ? "REFLECT" : "SYMMETRIC", n));
    }
    maps.push_back(MirrorMap(n, pads[2 * d], n + pads[2 * d] + pads[2 * d + 1], reflect));
  }
  return maps;
}

template <typename T>
class MirrorPadOp final : public OpKernel {
 public:
  MirrorPadOp(const OpKernelConstruction& c, bool reflect) : OpKernel(c), reflect_(reflect) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const bool reflect, ReadMode(c));
    return std::unique_ptr<OpKernel>(std::make_unique<MirrorPadOp>(c, reflect));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    ASSIGN_OR_RETURN(const std::vector<int64_t> pads,
                     ReadPaddings("MirrorPad", input, ctx.input(1)));
    ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> maps,
                     MirrorMaps("MirrorPad", input.shape(), pads, reflect_));
    TensorShape out_shape = input.shape();
    for (int d = 0; d < input.dims(); ++d)
      out_shape.set_dim(d, static_cast<int64_t>(maps[d].size()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, out_shape));
    const std::vector<int64_t> strides = StridesOf(input.shape());
    const T* src = input.data<T>();
    T* dst = out->data<T>();
    ForEachIndex(out_shape, [&](int64_t flat, const std::vector<int64_t>& index) {
      int64_t at = 0;
      for (size_t d = 0; d < index.size(); ++d) at += maps[d][index[d]] * strides[d];
      dst[flat] = src[at];
    });
    return absl::OkStatus();
  }

 private:
  const bool reflect_;
};

// MirrorPadGrad(grad of the padded output, paddings): every element of the
// padded shape adds into the input element it mirrored.
template <typename T>
class MirrorPadGradOp final : public OpKernel {
 public:
  MirrorPadGradOp(const OpKernelConstruction& c, bool reflect) : OpKernel(c), reflect_(reflect) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const bool reflect, ReadMode(c));
    return std::unique_ptr<OpKernel>(std::make_unique<MirrorPadGradOp>(c, reflect));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& grad = ctx.input(0);
    ASSIGN_OR_RETURN(const std::vector<int64_t> pads,
                     ReadPaddings("MirrorPadGrad", grad, ctx.input(1)));
    TensorShape small = grad.shape();
    for (int d = 0; d < grad.dims(); ++d) {
      const int64_t size = grad.dim_size(d) - pads[2 * d] - pads[2 * d + 1];
      if (size < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "MirrorPadGrad: paddings [%d, %d] exceed dimension %d of the gradient (%d)",
            pads[2 * d], pads[2 * d + 1], d, grad.dim_size(d)));
      }
      small.set_dim(d, size);
    }
    ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> maps,
                     MirrorMaps("MirrorPadGrad", small, pads, reflect_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, small));
    const std::vector<int64_t> strides = StridesOf(small);
    const T* src = grad.data<T>();
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T{});
    ForEachIndex(grad.shape(), [&](int64_t flat, const std::vector<int64_t>& index) {
      int64_t at = 0;
      for (size_t d = 0; d < index.size(); ++d) at += maps[d][index[d]] * strides[d];
      dst[at] += src[flat];
    });
    return absl::OkStatus();
  }

 private:
  const bool reflect_;
};

}  // namespace

void RegisterCpuPadKernels(KernelRegistry& r) {
  RegisterForTypes<PadOp, float, double, int32_t, int64_t, uint8_t>(r, kDeviceCpu, "Pad");
  RegisterForTypes<PadOp, float, double, int32_t, int64_t, uint8_t>(r, kDeviceCpu, "PadV2");
  RegisterForTypes<MirrorPadOp, float, double, int32_t, int64_t, uint8_t>(r, kDeviceCpu,
                                                                          "MirrorPad");
  RegisterForTypes<MirrorPadGradOp, float, double, int32_t, int64_t>(r, kDeviceCpu,
                                                                     "MirrorPadGrad");
}

}  // namespace rill
