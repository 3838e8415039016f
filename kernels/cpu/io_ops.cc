// CPU kernels for TensorFlow's V2 checkpoint ops: SaveV2 and RestoreV2 (one
// bundle per prefix), MergeV2Checkpoints (joins a sharded save), and the
// ShardedFilename/ShardedFilespec name helpers.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_slice.h"
#include "io/bundle_merge.h"
#include "io/bundle_reader.h"
#include "io/bundle_writer.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

absl::StatusOr<std::string> ScalarString(const KernelContext& ctx, int input, const char* what) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != DT_STRING || t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s must be a scalar string, got %s %s", what,
                                                      DataTypeString(t.dtype()),
                                                      t.shape().DebugString()));
  }
  return t.scalar<std::string>();
}

absl::StatusOr<int32_t> ScalarInt(const KernelContext& ctx, int input, const char* what) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != DT_INT32 || t.dims() != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be a scalar int32, got %s", what, t.shape().DebugString()));
  }
  return t.scalar<int32_t>();
}

// tensor_names and shape_and_slices: string vectors of one entry per tensor.
absl::StatusOr<std::vector<std::string>> NameList(const KernelContext& ctx, int input,
                                                  const char* what, int count) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != DT_STRING || t.dims() != 1 || t.NumElements() != count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be a string vector of %d entries (one per tensor), got %s %s",
                        what, count, DataTypeString(t.dtype()), t.shape().DebugString()));
  }
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + count);
}

// The inputs SaveV2 and RestoreV2 share: the prefix, then a name and a
// shape_and_slices entry per tensor.
struct CheckpointArgs {
  std::string prefix;
  std::vector<std::string> names;
  std::vector<std::string> slices;
};

absl::StatusOr<CheckpointArgs> ReadCheckpointArgs(const KernelContext& ctx, int count) {
  CheckpointArgs args;
  ASSIGN_OR_RETURN(args.prefix, ScalarString(ctx, 0, "prefix"));
  ASSIGN_OR_RETURN(args.names, NameList(ctx, 1, "tensor_names", count));
  ASSIGN_OR_RETURN(args.slices, NameList(ctx, 2, "shape_and_slices", count));
  return args;
}

class SaveV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const int count = ctx.num_inputs() - 3;
    ASSIGN_OR_RETURN(const CheckpointArgs args, ReadCheckpointArgs(ctx, count));
    const std::vector<std::string>& names = args.names;
    const std::vector<std::string>& slices = args.slices;
    ASSIGN_OR_RETURN(std::unique_ptr<io::BundleWriter> writer,
                     io::BundleWriter::Create(args.prefix));
    for (int i = 0; i < count; ++i) {
      const Tensor& tensor = ctx.input(3 + i);
      ASSIGN_OR_RETURN(const std::optional<ShapeAndSlice> spec, ParseShapeAndSlice(slices[i]));
      if (!spec.has_value()) {
        RETURN_IF_ERROR(writer->Add(names[i], tensor));
      } else {
        RETURN_IF_ERROR(writer->AddSlice(names[i], spec->full_shape, spec->slice, tensor));
      }
    }
    return writer->Finish();
  }
};

class RestoreV2Op final : public OpKernel {
 public:
  explicit RestoreV2Op(const OpKernelConstruction& c)
      : OpKernel(c), dtypes_(GetTypeListAttr(c.def(), "dtypes").value_or(DataTypeVector{})) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const int count = ctx.num_outputs();
    ASSIGN_OR_RETURN(const CheckpointArgs args, ReadCheckpointArgs(ctx, count));
    const std::vector<std::string>& names = args.names;
    const std::vector<std::string>& slices = args.slices;
    const std::string& prefix = args.prefix;
    ASSIGN_OR_RETURN(std::unique_ptr<io::BundleReader> reader, io::BundleReader::Open(prefix));
    for (int i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(const std::optional<ShapeAndSlice> spec, ParseShapeAndSlice(slices[i]));
      ASSIGN_OR_RETURN(Tensor tensor,
                       spec.has_value() ? reader->ReadSlice(names[i], spec->full_shape, spec->slice)
                                        : reader->Read(names[i]));
      if (i < static_cast<int>(dtypes_.size()) && tensor.dtype() != dtypes_[i]) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "tensor '%s' in checkpoint '%s' is %s, the restore expects %s", names[i], prefix,
            DataTypeString(tensor.dtype()), DataTypeString(dtypes_[i])));
      }
      ctx.set_output(i, std::move(tensor));
    }
    return absl::OkStatus();
  }

 private:
  const DataTypeVector dtypes_;
};

class MergeV2CheckpointsOp final : public OpKernel {
 public:
  explicit MergeV2CheckpointsOp(const OpKernelConstruction& c) : OpKernel(c) {
    options_.delete_old_dirs = GetBoolAttr(c.def(), "delete_old_dirs").value_or(true);
    options_.allow_missing_files = GetBoolAttr(c.def(), "allow_missing_files").value_or(false);
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& prefixes = ctx.input(0);
    if (prefixes.dtype() != DT_STRING || prefixes.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "checkpoint_prefixes must be a string vector, got %s", prefixes.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(const std::string destination, ScalarString(ctx, 1, "destination_prefix"));
    const std::vector<std::string> inputs(prefixes.data<std::string>(),
                                          prefixes.data<std::string>() + prefixes.NumElements());
    return io::MergeBundles(inputs, destination, options_);
  }

 private:
  io::MergeOptions options_;
};

absl::Status SetScalarString(KernelContext& ctx, std::string value) {
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
  out->scalar<std::string>() = std::move(value);
  return absl::OkStatus();
}

class ShardedFilenameOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const std::string basename, ScalarString(ctx, 0, "basename"));
    ASSIGN_OR_RETURN(const int32_t shard, ScalarInt(ctx, 1, "shard"));
    ASSIGN_OR_RETURN(const int32_t num_shards, ScalarInt(ctx, 2, "num_shards"));
    if (num_shards <= 0 || shard < 0 || shard >= num_shards) {
      return absl::InvalidArgumentError(
          absl::StrFormat("shard %d of %d is out of range", shard, num_shards));
    }
    return SetScalarString(ctx, absl::StrFormat("%s-%05d-of-%05d", basename, shard, num_shards));
  }
};

class ShardedFilespecOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const std::string basename, ScalarString(ctx, 0, "basename"));
    ASSIGN_OR_RETURN(const int32_t num_shards, ScalarInt(ctx, 1, "num_shards"));
    if (num_shards <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat("num_shards is %d", num_shards));
    }
    return SetScalarString(ctx, absl::StrFormat("%s-\?\?\?\?\?-of-%05d", basename, num_shards));
  }
};

// StringJoin: element-wise concatenation of same-shaped string tensors,
// scalars repeated (the saver names its shard directory with it).
class StringJoinOp final : public OpKernel {
 public:
  explicit StringJoinOp(const OpKernelConstruction& c)
      : OpKernel(c), separator_(GetStringAttr(c.def(), "separator").value_or("")) {}

  absl::Status Compute(KernelContext& ctx) const override {
    TensorShape shape;
    bool have_shape = false;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.input(i);
      if (t.dims() == 0) continue;
      if (have_shape && !(t.shape() == shape)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("StringJoin inputs must be scalars or of one shape: %s and %s",
                            shape.DebugString(), t.shape().DebugString()));
      }
      shape = t.shape();
      have_shape = true;
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    for (int64_t e = 0; e < out->NumElements(); ++e) {
      std::string joined;
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& t = ctx.input(i);
        if (i > 0) joined += separator_;
        joined += t.data<std::string>()[t.dims() == 0 ? 0 : e];
      }
      out->data<std::string>()[e] = std::move(joined);
    }
    return absl::OkStatus();
  }

 private:
  const std::string separator_;
};

}  // namespace

void RegisterCpuIoKernels(KernelRegistry& r) {
  r.Register(KernelDef("SaveV2"), MakeKernel<SaveV2Op>);
  r.Register(KernelDef("RestoreV2"), MakeKernel<RestoreV2Op>);
  r.Register(KernelDef("MergeV2Checkpoints"), MakeKernel<MergeV2CheckpointsOp>);
  r.Register(KernelDef("ShardedFilename"), MakeKernel<ShardedFilenameOp>);
  r.Register(KernelDef("ShardedFilespec"), MakeKernel<ShardedFilespecOp>);
  r.Register(KernelDef("StringJoin"), MakeKernel<StringJoinOp>);
}

}  // namespace rill
