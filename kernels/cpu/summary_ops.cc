// CPU kernels for ScalarSummary, HistogramSummary and MergeSummary: each
// outputs a scalar string holding a serialized Summary.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/proto/summary.pb.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "io/histogram.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using transform_util::Unsupported;

// The types of TensorFlow's realnumbertype, which the ops accept.
template <typename T>
constexpr bool kIsRealNumber = (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) ||
                               std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

const DataTypeVector& RealNumberTypes() {
  static const DataTypeVector* const types =
      new DataTypeVector{DT_FLOAT, DT_DOUBLE, DT_INT32,    DT_UINT8, DT_INT16,  DT_INT8,
                         DT_INT64, DT_UINT16, DT_BFLOAT16, DT_HALF,  DT_UINT32, DT_UINT64};
  return *types;
}

// Calls fn(i, value) for every element of `values` as a double.
template <typename Fn>
absl::Status ForEachAsDouble(std::string_view op, const Tensor& values, Fn&& fn) {
  return DispatchType(
      values.dtype(),
      [&]<typename T>() -> absl::Status {
        if constexpr (kIsRealNumber<T>) {
          const T* data = values.data<T>();
          for (int64_t i = 0; i < values.NumElements(); ++i) {
            RETURN_IF_ERROR(fn(i, static_cast<double>(data[i])));
          }
          return absl::OkStatus();
        } else {
          return Unsupported(op, values.dtype());
        }
      },
      [&] { return Unsupported(op, values.dtype()); });
}

absl::Status OutputSummary(KernelContext& ctx, const Summary& summary) {
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
  if (!summary.SerializeToString(&out->scalar<std::string>())) {
    return absl::ResourceExhaustedError("summary too large to serialize");
  }
  return absl::OkStatus();
}

// One Summary.Value{tag, simple_value} per element; tags and values have
// one shape.
class ScalarSummaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& tags = ctx.input(0);
    const Tensor& values = ctx.input(1);
    if (!(tags.shape() == values.shape())) {
      // TensorFlow names the tag when there is only one.
      const std::string single_tag =
          tags.NumElements() == 1 ? absl::StrCat(" (tag '", tags.data<std::string>()[0], "')") : "";
      return absl::InvalidArgumentError(
          absl::StrCat("tags and values are not the same shape: ", tags.shape().DebugString(),
                       " != ", values.shape().DebugString(), single_tag));
    }
    Summary summary;
    const std::string* tag = tags.data<std::string>();
    RETURN_IF_ERROR(ForEachAsDouble("ScalarSummary", values, [&](int64_t i, double v) {
      Summary::Value* value = summary.add_value();
      value->set_tag(tag[i]);
      value->set_simple_value(static_cast<float>(v));
      return absl::OkStatus();
    }));
    return OutputSummary(ctx, summary);
  }
};

// One Summary.Value{tag, histo} over every element of `values`.
class HistogramSummaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& tag = ctx.input(0);
    const Tensor& values = ctx.input(1);
    if (tag.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tags must be scalar, got shape ", tag.shape().DebugString()));
    }
    const std::string& tag_name = tag.scalar<std::string>();
    Histogram histogram;
    RETURN_IF_ERROR(ForEachAsDouble("HistogramSummary", values, [&](int64_t, double v) {
      // TensorBoard cannot draw these, and a NaN usually means training
      // diverged, which the error makes visible.
      if (std::isnan(v)) {
        return absl::InvalidArgumentError(absl::StrCat("Nan in summary histogram for: ", tag_name));
      }
      if (std::isinf(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("Infinity in summary histogram for: ", tag_name));
      }
      histogram.Add(v);
      return absl::OkStatus();
    }));
    Summary summary;
    Summary::Value* value = summary.add_value();
    value->set_tag(tag_name);
    histogram.EncodeToProto(value->mutable_histo());
    return OutputSummary(ctx, summary);
  }
};

// The values of every serialized Summary in every input, in order. Empty
// tags may repeat (tensor summaries leave them empty); others may not.
class MergeSummaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(KernelContext& ctx) const override {
    Summary merged;
    absl::flat_hash_set<std::string> tags;
    for (int input = 0; input < ctx.num_inputs(); ++input) {
      const Tensor& serialized = ctx.input(input);
      for (int64_t i = 0; i < serialized.NumElements(); ++i) {
        Summary summary;
        if (!summary.ParseFromString(serialized.data<std::string>()[i])) {
          return absl::InvalidArgumentError("Could not parse one of the summary inputs");
        }
        for (Summary::Value& value : *summary.mutable_value()) {
          if (!value.tag().empty() && !tags.insert(value.tag()).second) {
            return absl::InvalidArgumentError(
                absl::StrCat("Duplicate tag ", value.tag(), " found in summary inputs"));
          }
          *merged.add_value() = std::move(value);
        }
      }
    }
    return OutputSummary(ctx, merged);
  }
};

}  // namespace

void RegisterCpuSummaryKernels(KernelRegistry& r) {
  r.Register(KernelDef("ScalarSummary").TypeConstraint("T", RealNumberTypes()),
             MakeKernel<ScalarSummaryOp>);
  r.Register(KernelDef("HistogramSummary").TypeConstraint("T", RealNumberTypes()),
             MakeKernel<HistogramSummaryOp>);
  r.Register(KernelDef("MergeSummary"), MakeKernel<MergeSummaryOp>);
}

}  // namespace rill
