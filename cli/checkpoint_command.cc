// `rill checkpoint PREFIX [--tensor NAME]`: lists the tensors of a V2
// checkpoint (TensorFlow's or rill's), or prints one, as TensorFlow's
// inspect_checkpoint does.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/tensor_json.h"
#include "cli/tensor_text.h"
#include "fmt/core.h"
#include "google/protobuf/text_format.h"
#include "graph/proto/checkpoint_state.pb.h"
#include "graph/status_macros.h"
#include "graph/tensor_slice.h"
#include "io/bundle_format.h"
#include "io/bundle_reader.h"
#include "io/posix_file.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill checkpoint PREFIX [--tensor NAME]\n"
    "  PREFIX: the checkpoint's path without extension (model.ckpt-1000), one of its files\n"
    "  (model.ckpt-1000.index), or a directory whose 'checkpoint' file names the latest one\n";

// A partitioned tensor's note lists this many slices, then "...".
constexpr int kListedSlices = 4;

// The prefix of the checkpoint `path` names: users paste a file name, or
// give the directory a training run saved into.
absl::StatusOr<std::string> ResolvePrefix(std::string path) {
  static const std::regex kDataSuffix(R"(\.data-[0-9]{5}-of-[0-9]{5}$)");
  if (path.ends_with(".index")) return path.substr(0, path.size() - 6);
  if (std::smatch match; std::regex_search(path, match, kDataSuffix)) {
    return path.substr(0, match.position(0));
  }
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return path;
  const std::string state_path = (std::filesystem::path(path) / "checkpoint").string();
  if (!io::FileExists(state_path)) {
    return absl::NotFoundError(fmt::format(
        "'{}' is a directory without a 'checkpoint' file; give a checkpoint prefix such as "
        "{}/model.ckpt-1000",
        path, path));
  }
  ASSIGN_OR_RETURN(const std::string text, io::ReadFileToString(state_path));
  CheckpointState state;
  if (!google::protobuf::TextFormat::ParseFromString(text, &state) ||
      state.model_checkpoint_path().empty()) {
    return absl::DataLossError(
        fmt::format("'{}' does not name a checkpoint (model_checkpoint_path)", state_path));
  }
  // TensorFlow writes paths relative to the directory unless they were
  // saved elsewhere.
  const std::filesystem::path latest(state.model_checkpoint_path());
  return latest.is_absolute() ? latest.string() : (std::filesystem::path(path) / latest).string();
}

struct Row {
  std::string name;
  std::string dtype;
  std::string shape;
  int64_t bytes = 0;
  std::string note;
};

// Every data file must be there and hold the bytes the index places in
// it, so that a listing that succeeds means the tensors can be read
// (their checksums are checked only when read).
absl::Status CheckDataFiles(const io::BundleReader& reader,
                            const std::map<int, uint64_t>& bytes_needed) {
  const int shards = reader.header().num_shards();
  for (int shard = 0; shard < shards; ++shard) {
    ASSIGN_OR_RETURN(const std::unique_ptr<io::RandomAccessFile> file,
                     io::RandomAccessFile::Open(io::DataFilename(reader.prefix(), shard, shards)));
    const auto it = bytes_needed.find(shard);
    if (it != bytes_needed.end() && it->second > file->size()) {
      return absl::DataLossError(fmt::format(
          "'{}' is truncated: the index places tensor bytes up to offset {}, the file has {} "
          "bytes",
          file->path(), it->second, file->size()));
    }
  }
  return absl::OkStatus();
}

std::string SlicesNote(const BundleEntryProto& entry) {
  std::string note = fmt::format("partitioned in {} slices:", entry.slices_size());
  for (int i = 0; i < entry.slices_size() && i < kListedSlices; ++i) {
    absl::StatusOr<TensorSlice> slice = TensorSlice::FromProto(entry.slices(i));
    note += ' ';
    note += slice.ok() ? slice->DebugString() : std::string("?");
  }
  if (entry.slices_size() > kListedSlices) note += " ...";
  return note;
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  for (; value >= 1024 && unit < 3; ++unit) value /= 1024;
  return fmt::format("{} bytes ({:.1f} {})", bytes, value, kUnits[unit]);
}

absl::Status List(const io::BundleReader& reader) {
  const std::string index_path = io::IndexFilename(reader.prefix());
  std::map<std::string, int64_t> piece_bytes;  // By key; pieces sort first.
  std::map<int, uint64_t> bytes_needed;        // By shard: the end of its last tensor.
  std::vector<Row> rows;
  RETURN_IF_ERROR(reader.ForEachEntry([&](std::string_view key,
                                          const BundleEntryProto& entry) -> absl::Status {
    if (entry.slices_size() == 0) {
      if (entry.offset() < 0 || entry.size() < 0 || entry.shard_id() < 0 ||
          entry.shard_id() >= reader.header().num_shards()) {
        return absl::DataLossError(fmt::format(
            "'{}': an entry lies outside the data files (shard {} of {}, offset {}, size {})",
            index_path, entry.shard_id(), reader.header().num_shards(), entry.offset(),
            entry.size()));
      }
      uint64_t& end = bytes_needed[entry.shard_id()];
      end = std::max(end,
                     static_cast<uint64_t>(entry.offset()) + static_cast<uint64_t>(entry.size()));
    }
    // A piece of a partitioned tensor: counted under its full name.
    if (key.front() == '\0') {
      piece_bytes[std::string(key)] = entry.size();
      return absl::OkStatus();
    }
    Row row;
    row.name = std::string(key);
    row.dtype = NumpyDtypeName(entry.dtype());
    absl::StatusOr<TensorShape> shape = TensorShape::FromProto(entry.shape());
    if (!shape.ok()) {
      return absl::DataLossError(fmt::format("'{}': tensor '{}' has a bad shape: {}", index_path,
                                             row.name, std::string(shape.status().message())));
    }
    row.shape = shape->DebugString();
    row.bytes = entry.size();
    if (entry.slices_size() > 0) {
      row.bytes = 0;
      for (const TensorSliceProto& proto : entry.slices()) {
        absl::StatusOr<TensorSlice> slice = TensorSlice::FromProto(proto);
        const auto piece =
            slice.ok() ? piece_bytes.find(io::SliceKey(key, *slice)) : piece_bytes.end();
        if (piece == piece_bytes.end()) {
          return absl::DataLossError(fmt::format(
              "'{}': a slice of partitioned tensor '{}' is missing", index_path, row.name));
        }
        row.bytes += piece->second;
      }
      row.note = SlicesNote(entry);
    }
    rows.push_back(std::move(row));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(CheckDataFiles(reader, bytes_needed));

  Row heading{"name", "dtype", "shape", 0, ""};
  size_t name_width = heading.name.size(), dtype_width = heading.dtype.size(),
         shape_width = heading.shape.size(), bytes_width = 5;
  int64_t total = 0;
  for (const Row& row : rows) {
    name_width = std::max(name_width, row.name.size());
    dtype_width = std::max(dtype_width, row.dtype.size());
    shape_width = std::max(shape_width, row.shape.size());
    bytes_width = std::max(bytes_width, std::to_string(row.bytes).size());
    total += row.bytes;
  }
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>{}}\n", heading.name, name_width, heading.dtype,
             dtype_width, heading.shape, shape_width, "bytes", bytes_width);
  for (const Row& row : rows) {
    std::string line =
        fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>{}}", row.name, name_width, row.dtype, dtype_width,
                    row.shape, shape_width, row.bytes, bytes_width);
    if (!row.note.empty()) line += "  " + row.note;
    fmt::print("{}\n", line);
  }
  const int shards = reader.header().num_shards();
  fmt::print("{} tensor{}, {}, {} shard{}: {}\n", rows.size(), rows.size() == 1 ? "" : "s",
             HumanBytes(total), shards, shards == 1 ? "" : "s", reader.prefix());
  return absl::OkStatus();
}

absl::Status Print(const io::BundleReader& reader, const std::string& name) {
  absl::StatusOr<Tensor> tensor = reader.Read(name);
  if (absl::IsNotFound(tensor.status()) && !reader.Entry(name).ok()) {
    return absl::NotFoundError(fmt::format("{} (run 'rill checkpoint {}' to list its tensors)",
                                           std::string(tensor.status().message()),
                                           reader.prefix()));
  }
  if (!tensor.ok()) return tensor.status();
  fmt::print("{}\n", ReadableTensorLine(name, *tensor));
  return absl::OkStatus();
}

absl::Status Run(const std::string& path, const std::optional<std::string>& tensor) {
  ASSIGN_OR_RETURN(const std::string prefix, ResolvePrefix(path));
  ASSIGN_OR_RETURN(const std::unique_ptr<io::BundleReader> reader, io::BundleReader::Open(prefix));
  return tensor ? Print(*reader, *tensor) : List(*reader);
}

}  // namespace

int RunCheckpointCommand(const std::vector<std::string>& args) {
  auto parsed = ParseArgs(args, {"tensor"}, {});
  if (parsed.ok() && parsed->help) return PrintHelp(kUsage);
  if (!parsed.ok() || parsed->positional.size() != 1) {
    if (!parsed.ok()) {
      fmt::print(stderr, "rill checkpoint: {}\n", std::string(parsed.status().message()));
    }
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (const absl::Status status = Run(parsed->positional[0], parsed->Value("tensor"));
      !status.ok()) {
    fmt::print(stderr, "rill checkpoint: {}\n", OneLine(std::string(status.message())));
    return 1;
  }
  return 0;
}

}  // namespace rill::cli
