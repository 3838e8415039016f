#include "io/bundle_writer.h"

#include <sys/stat.h>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/bundle_format.h"
#include "io/crc32c.h"
#include "io/table.h"

namespace rill::io {

BundleWriter::BundleWriter(std::string prefix, std::string data_temp,
                           std::unique_ptr<WritableFile> data, Env* env)
    : prefix_(std::move(prefix)),
      data_temp_(std::move(data_temp)),
      env_(env),
      data_(std::move(data)) {}

BundleWriter::~BundleWriter() {
  if (!finished_) {
    data_.reset();
    env_->DeleteFile(data_temp_).IgnoreError();
  }
}

absl::Status RemoveIndexBeforeReplacing(const std::string& prefix, Env* env) {
  const std::string index = IndexFilename(prefix);
  if (!env->FileExists(index)) return absl::OkStatus();
  RETURN_IF_ERROR(env->DeleteFile(index));
  return env->SyncDir(Dirname(index));
}

absl::Status CheckCheckpointPrefix(std::string_view prefix) {
  if (prefix.empty()) return absl::InvalidArgumentError("checkpoint prefix is empty");
  const size_t slash = prefix.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? prefix : prefix.substr(slash + 1);
  if (last.empty() || last == "." || last == "..") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint prefix '%s' names no file (its last part is '%s'); give a path such as "
        "DIR/model.ckpt",
        std::string(prefix), std::string(last)));
  }
  struct stat info;
  if (stat(std::string(prefix).c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint prefix '%s' is an existing %s; its files would go beside it: give a path "
        "such as %s/model.ckpt",
        std::string(prefix), S_ISDIR(info.st_mode) ? "directory" : "file that is not a regular one",
        S_ISDIR(info.st_mode) ? std::string(prefix) : "DIR"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BundleWriter>> BundleWriter::Create(std::string prefix, Env* env) {
  RETURN_IF_ERROR(CheckCheckpointPrefix(prefix));
  RETURN_IF_ERROR(CreateDirectories(Dirname(prefix), env));
  std::string temp = TemporaryPathFor(DataFilename(prefix, 0, 1));
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> data,
                   env->NewWritableFile(temp, WriteMode::kTruncate));
  return std::unique_ptr<BundleWriter>(
      new BundleWriter(std::move(prefix), std::move(temp), std::move(data), env));
}

absl::StatusOr<BundleEntryProto> BundleWriter::AppendData(std::string_view key,
                                                          const Tensor& tensor) {
  if (!DataTypeCanBeStored(tensor.dtype()) || tensor.dtype() == DT_RESOURCE) {
    return absl::InvalidArgumentError(
        absl::StrFormat("checkpoint '%s': tensor '%s' has dtype %s, which a checkpoint cannot hold",
                        prefix_, std::string(key), DataTypeString(tensor.dtype())));
  }
  BundleEntryProto entry;
  entry.set_dtype(tensor.dtype());
  tensor.shape().AsProto(entry.mutable_shape());
  entry.set_offset(static_cast<int64_t>(data_->size()));
  uint32_t crc = 0;
  if (tensor.dtype() == DT_STRING) {
    const std::string bytes = EncodeStringTensor(tensor, &crc);
    RETURN_IF_ERROR(data_->Append(bytes));
    entry.set_size(static_cast<int64_t>(bytes.size()));
  } else {
    const size_t n = static_cast<size_t>(tensor.NumElements()) * DataTypeSize(tensor.dtype());
    const std::string_view bytes(static_cast<const char*>(tensor.raw_data()), n);
    for (size_t done = 0; done < n; done += kChecksumChunkBytes) {
      const std::string_view chunk = bytes.substr(done, kChecksumChunkBytes);
      crc = crc32c::Extend(crc, chunk.data(), chunk.size());
      RETURN_IF_ERROR(data_->Append(chunk));
    }
    entry.set_size(static_cast<int64_t>(n));
  }
  entry.set_crc32c(crc32c::Mask(crc));
  return entry;
}

absl::Status BundleWriter::Add(std::string_view key, const Tensor& tensor) {
  RETURN_IF_ERROR(status_);
  if (finished_) return absl::FailedPreconditionError("checkpoint writer already finished");
  if (key.empty()) {
    return absl::InvalidArgumentError("checkpoint '" + prefix_ + "': empty tensor name");
  }
  if (entries_.count(std::string(key)) > 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("checkpoint '%s': tensor '%s' is saved twice", prefix_, std::string(key)));
  }
  absl::StatusOr<BundleEntryProto> entry = AppendData(key, tensor);
  if (!entry.ok()) {
    // A failed write leaves the data file in an unknown state.
    if (!absl::IsInvalidArgument(entry.status())) status_ = entry.status();
    return entry.status();
  }
  entries_.emplace(std::string(key), *std::move(entry));
  return absl::OkStatus();
}

absl::Status BundleWriter::AddSlice(std::string_view key, const TensorShape& full_shape,
                                    const TensorSlice& slice, const Tensor& slice_tensor) {
  RETURN_IF_ERROR(slice.CheckFits(full_shape));
  if (!(slice.SliceShape(full_shape) == slice_tensor.shape())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint '%s': slice '%s' of '%s' %s wants shape %s, got %s", prefix_,
        slice.DebugString(), std::string(key), full_shape.DebugString(),
        slice.SliceShape(full_shape).DebugString(), slice_tensor.shape().DebugString()));
  }
  // The full entry lists the pieces; it holds no data of its own.
  auto [it, inserted] = entries_.try_emplace(std::string(key));
  BundleEntryProto& full = it->second;
  if (inserted) {
    full.set_dtype(slice_tensor.dtype());
    full_shape.AsProto(full.mutable_shape());
  } else if (full.slices_size() == 0 || full.dtype() != slice_tensor.dtype()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint '%s': '%s' is saved both whole and in slices, or with two dtypes", prefix_,
        std::string(key)));
  }
  *full.add_slices() = slice.AsProto();
  return Add(SliceKey(key, slice), slice_tensor);
}

absl::Status BundleWriter::Finish() {
  RETURN_IF_ERROR(status_);
  if (finished_) return absl::FailedPreconditionError("checkpoint writer already finished");
  finished_ = true;
  const std::string data_path = DataFilename(prefix_, 0, 1);
  // The data is on disk under its final name before the index names it.
  absl::Status status = data_->Sync();
  if (status.ok()) status = data_->Close();
  if (status.ok()) status = RemoveIndexBeforeReplacing(prefix_, env_);
  if (status.ok()) status = RenameFile(data_temp_, data_path, env_);
  if (!status.ok()) {
    if (env_->FileExists(data_temp_)) env_->DeleteFile(data_temp_).IgnoreError();
    return status;
  }
  return WriteBundleIndex(prefix_, MakeBundleHeader(1), entries_, env_);
}

absl::Status WriteBundleIndex(const std::string& prefix, const BundleHeaderProto& header,
                              const std::map<std::string, BundleEntryProto>& entries, Env* env) {
  RETURN_IF_ERROR(CheckCheckpointPrefix(prefix));
  const std::string path = IndexFilename(prefix);
  const std::string temp = TemporaryPathFor(path);
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                     env->NewWritableFile(temp, WriteMode::kTruncate));
    TableWriter table(file.get());
    RETURN_IF_ERROR(table.Add(kHeaderKey, header.SerializeAsString()));
    for (const auto& [key, entry] : entries) {
      RETURN_IF_ERROR(table.Add(key, entry.SerializeAsString()));
    }
    RETURN_IF_ERROR(table.Finish());
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
    return RenameFile(temp, path, env);
  }();
  if (!status.ok() && env->FileExists(temp)) env->DeleteFile(temp).IgnoreError();
  return status;
}

}  // namespace rill::io
