#include "io/table.h"

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "leveldb/env.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/table.h"
#include "leveldb/table_builder.h"

namespace rill::io {
namespace {

leveldb::Options TableOptions() {
  leveldb::Options options;
  options.block_size = kTableBlockSize;
  options.compression = leveldb::kNoCompression;
  options.paranoid_checks = true;
  return options;
}

leveldb::ReadOptions CheckedReads() {
  leveldb::ReadOptions options;
  options.verify_checksums = true;
  options.fill_cache = false;
  return options;
}

absl::Status FromLevelDb(const leveldb::Status& status, const std::string& path) {
  if (status.ok()) return absl::OkStatus();
  const std::string message = absl::StrFormat("'%s': %s", path, status.ToString());
  if (status.IsCorruption()) return absl::DataLossError(message);
  if (status.IsNotFound()) return absl::NotFoundError(message);
  return absl::InternalError(message);
}

leveldb::Status ToLevelDb(const absl::Status& status) {
  if (status.ok()) return leveldb::Status::OK();
  const std::string message(status.message());
  if (absl::IsDataLoss(status)) return leveldb::Status::Corruption(message);
  return leveldb::Status::IOError(message);
}

std::string_view View(const leveldb::Slice& slice) { return {slice.data(), slice.size()}; }

// LevelDB's table format: a footer of two block handles (the metaindex's
// and the index's, varint64 offset and size each) padded to 40 bytes, then
// the magic number; every block followed by a type byte and a CRC.
constexpr size_t kFooterSize = 48;
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr uint64_t kBlockTrailerSize = 5;

bool GetVarint(std::string_view& in, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// DATA_LOSS when the block handle at the front of `in` points past
// `blocks_end`; OK (and nothing consumed) when it does not parse, which
// LevelDB reports itself.
absl::Status CheckHandle(std::string_view& in, uint64_t blocks_end, const std::string& path,
                         const char* what) {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string_view rest = in;
  if (!GetVarint(rest, &offset) || !GetVarint(rest, &size)) return absl::OkStatus();
  in = rest;
  if (offset > blocks_end || size > blocks_end - offset ||
      kBlockTrailerSize > blocks_end - offset - size) {
    return absl::DataLossError(absl::StrFormat(
        "'%s': not a valid table: %s [%d, +%d) lies past its blocks' end at byte %d", path, what,
        offset, size, blocks_end));
  }
  return absl::OkStatus();
}

// LevelDB allocates a block's size, as a handle gives it, before reading
// the block: a table of a few bytes could cost any amount of memory (and
// a failed allocation ends the process). So the footer's handles, and the
// index block's handles of the data blocks, are checked against the file's
// size first. Malformed parts are left to LevelDB, which reports them.
absl::Status CheckBlockHandles(const RandomAccessFile& file) {
  if (file.size() < kFooterSize) return absl::OkStatus();
  const uint64_t blocks_end = file.size() - kFooterSize;
  std::string footer(kFooterSize, '\0');
  RETURN_IF_ERROR(file.Read(blocks_end, footer.size(), footer.data()));
  uint64_t magic = 0;
  for (int i = 7; i >= 0; --i) magic = (magic << 8) | static_cast<unsigned char>(footer[40 + i]);
  if (magic != kTableMagic) return absl::OkStatus();
  std::string_view handles = footer;
  RETURN_IF_ERROR(CheckHandle(handles, blocks_end, file.path(), "the metaindex block"));
  std::string_view index_handle = handles;
  RETURN_IF_ERROR(CheckHandle(handles, blocks_end, file.path(), "the index block"));
  uint64_t index_offset = 0;
  uint64_t index_size = 0;
  if (!GetVarint(index_handle, &index_offset) || !GetVarint(index_handle, &index_size)) {
    return absl::OkStatus();
  }
  // The index block: entries (varint32 shared key bytes, unshared key
  // bytes, value bytes; the unshared key; the value, a data block's
  // handle), then the restart offsets (uint32 each) and their count.
  std::string index(index_size, '\0');
  RETURN_IF_ERROR(file.Read(index_offset, index.size(), index.data()));
  if (index.size() < 4) return absl::OkStatus();
  uint32_t restarts = 0;
  for (int i = 1; i <= 4; ++i) {
    restarts = (restarts << 8) | static_cast<unsigned char>(index[index.size() - i]);
  }
  if (restarts > (index.size() - 4) / 4) return absl::OkStatus();
  std::string_view entries = std::string_view(index).substr(0, index.size() - 4 - 4 * restarts);
  while (!entries.empty()) {
    uint64_t shared = 0;
    uint64_t unshared = 0;
    uint64_t value_size = 0;
    if (!GetVarint(entries, &shared) || !GetVarint(entries, &unshared) ||
        !GetVarint(entries, &value_size) || unshared > entries.size() ||
        value_size > entries.size() - unshared) {
      return absl::OkStatus();
    }
    entries.remove_prefix(unshared);
    std::string_view value = entries.substr(0, value_size);
    entries.remove_prefix(value_size);
    RETURN_IF_ERROR(CheckHandle(value, blocks_end, file.path(), "a data block"));
  }
  return absl::OkStatus();
}

}  // namespace

// Keeps the first error of the file as it was, code included (a full disk
// stays RESOURCE_EXHAUSTED), which the trip through leveldb::Status loses.
class TableWriter::FileAdapter final : public leveldb::WritableFile {
 public:
  explicit FileAdapter(io::WritableFile* file) : file_(file) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    return Keep(file_->Append(View(data)));
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return Keep(file_->Flush()); }
  leveldb::Status Sync() override { return Keep(file_->Sync()); }

  // The file's first error, else `status` naming the file.
  absl::Status Result(const leveldb::Status& status) const {
    if (!error_.ok()) return error_;
    return FromLevelDb(status, file_->path());
  }

 private:
  leveldb::Status Keep(absl::Status status) {
    error_.Update(status);
    return ToLevelDb(status);
  }

  io::WritableFile* const file_;
  absl::Status error_;
};

TableWriter::TableWriter(WritableFile* file)
    : adapter_(std::make_unique<FileAdapter>(file)),
      builder_(std::make_unique<leveldb::TableBuilder>(TableOptions(), adapter_.get())) {}

TableWriter::~TableWriter() {
  if (!finished_) builder_->Abandon();
}

absl::Status TableWriter::Add(std::string_view key, std::string_view value) {
  if (finished_) return absl::FailedPreconditionError("table already finished");
  if (builder_->NumEntries() > 0 && key <= std::string_view(last_key_)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("table keys must increase: '%s' after '%s'", std::string(key), last_key_));
  }
  // TensorFlow gives a value of two blocks or more a block of its own.
  if (builder_->NumEntries() > 0 && key.size() + value.size() >= 2 * kTableBlockSize) {
    builder_->Flush();
  }
  builder_->Add(leveldb::Slice(key.data(), key.size()), leveldb::Slice(value.data(), value.size()));
  last_key_.assign(key);
  return adapter_->Result(builder_->status());
}

absl::Status TableWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError("table already finished");
  finished_ = true;
  return adapter_->Result(builder_->Finish());
}

class TableReader::FileAdapter final : public leveldb::RandomAccessFile {
 public:
  explicit FileAdapter(const io::RandomAccessFile* file) : file_(file) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    absl::StatusOr<size_t> got = file_->ReadUpTo(offset, n, scratch);
    if (!got.ok()) return ToLevelDb(got.status());
    *result = leveldb::Slice(scratch, *got);
    return leveldb::Status::OK();
  }

 private:
  const io::RandomAccessFile* const file_;
};

TableReader::TableReader(std::unique_ptr<RandomAccessFile> file,
                         std::unique_ptr<FileAdapter> adapter,
                         std::unique_ptr<leveldb::Table> table)
    : file_(std::move(file)), adapter_(std::move(adapter)), table_(std::move(table)) {}

TableReader::~TableReader() = default;

absl::StatusOr<std::unique_ptr<TableReader>> TableReader::Open(const std::string& path, Env* env) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  RETURN_IF_ERROR(CheckBlockHandles(*file));
  auto adapter = std::make_unique<FileAdapter>(file.get());
  leveldb::Table* table = nullptr;
  RETURN_IF_ERROR(
      FromLevelDb(leveldb::Table::Open(TableOptions(), adapter.get(), file->size(), &table), path));
  return std::unique_ptr<TableReader>(
      new TableReader(std::move(file), std::move(adapter), std::unique_ptr<leveldb::Table>(table)));
}

absl::StatusOr<std::optional<std::string>> TableReader::Get(std::string_view key) const {
  std::unique_ptr<leveldb::Iterator> it(table_->NewIterator(CheckedReads()));
  it->Seek(leveldb::Slice(key.data(), key.size()));
  RETURN_IF_ERROR(FromLevelDb(it->status(), path()));
  if (!it->Valid() || View(it->key()) != key) return std::nullopt;
  return std::string(View(it->value()));
}

absl::Status TableReader::ForEach(
    const std::function<absl::Status(std::string_view key, std::string_view value)>& visit) const {
  std::unique_ptr<leveldb::Iterator> it(table_->NewIterator(CheckedReads()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    RETURN_IF_ERROR(visit(View(it->key()), View(it->value())));
  }
  return FromLevelDb(it->status(), path());
}

}  // namespace rill::io
