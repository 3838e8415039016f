// FaultInjectionEnv: each injected fault, what a simulated crash keeps, and
// a checkpoint (tensor bundle) written through it: a crash at any point,
// between the data file and the index in particular, leaves no checkpoint
// or a whole one, never a part.
#include "io/fault_injection_env.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/bundle_format.h"
#include "io/bundle_merge.h"
#include "io/bundle_reader.h"
#include "io/bundle_writer.h"
#include "io/posix_file.h"
#include "tests/test_util.h"

namespace rill::io {
namespace {

using ::rill::testing::MakeTempDir;
using ::rill::testing::ReadFileOrDie;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

class FaultInjectionEnvTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `path` through env_ with `bytes`, synced when `sync`.
  absl::Status Write(const std::string& path, const std::string& bytes, bool sync) {
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        env_.NewWritableFile(path, WriteMode::kTruncate);
    if (!file.ok()) return file.status();
    absl::Status status = (*file)->Append(bytes);
    if (status.ok() && sync) status = (*file)->Sync();
    status.Update((*file)->Close());
    return status;
  }

  const std::string dir_ = MakeTempDir();
  FaultInjectionEnv env_{Env::Posix()};
};

TEST_F(FaultInjectionEnvTest, FailsTheNthWriteOnceNamingTheFile) {
  env_.FailNth(FileOp::kWrite, 2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WritableFile> file,
                       env_.NewWritableFile(dir_ + "/f", WriteMode::kTruncate));
  EXPECT_OK(file->Append("a"));
  EXPECT_THAT(file->Append("b"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("cannot write '" + dir_ + "/f'")));
  EXPECT_OK(file->Append("c"));
  ASSERT_OK(file->Close());
  EXPECT_EQ(ReadFileOrDie(dir_ + "/f"), "ac");
  EXPECT_EQ(env_.count(FileOp::kWrite), 3);
}

TEST_F(FaultInjectionEnvTest, FailsTheNthSyncAndRenameOnce) {
  env_.FailNth(FileOp::kSync, 1);
  EXPECT_THAT(Write(dir_ + "/f", "x", /*sync=*/true),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("cannot sync '" + dir_ + "/f'")));
  EXPECT_OK(Write(dir_ + "/f", "x", /*sync=*/true));
  env_.FailNth(FileOp::kRename, 1);
  EXPECT_THAT(env_.RenameFile(dir_ + "/f", dir_ + "/g"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr(dir_ + "/g")));
  EXPECT_TRUE(env_.FileExists(dir_ + "/f"));
  EXPECT_OK(env_.RenameFile(dir_ + "/f", dir_ + "/g"));
  env_.FailNth(FileOp::kSyncDir, 1);
  EXPECT_THAT(env_.SyncDir(dir_), StatusIs(absl::StatusCode::kInternal, HasSubstr(dir_)));
}

TEST_F(FaultInjectionEnvTest, AFullDiskWritesWhatFitsThenRefuses) {
  env_.SetFreeSpace(5);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WritableFile> file,
                       env_.NewWritableFile(dir_ + "/f", WriteMode::kTruncate));
  EXPECT_OK(file->Append("abc"));
  EXPECT_THAT(file->Append("defg"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr(dir_ + "/f"), HasSubstr("No space left on device"))));
  EXPECT_THAT(file->Append("h"), StatusIs(absl::StatusCode::kResourceExhausted, ::testing::_));
  ASSERT_OK(file->Close());
  EXPECT_EQ(ReadFileOrDie(dir_ + "/f"), "abcde");
  EXPECT_EQ(env_.bytes_written(), 5u);
}

// Bytes after the last sync, and names made since the directory's last
// sync, are lost; a file renamed over comes back.
TEST_F(FaultInjectionEnvTest, ACrashKeepsOnlyWhatWasMadeDurable) {
  ASSERT_OK(WriteFileAtomically(dir_ + "/old", "old bytes", Env::Posix()));
  ASSERT_OK(Write(dir_ + "/durable", "abc", /*sync=*/true));
  ASSERT_OK(env_.SyncDir(dir_));
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<WritableFile> file,
                         env_.NewWritableFile(dir_ + "/durable", WriteMode::kAppend));
    ASSERT_OK(file->Append("unsynced"));
  }
  ASSERT_OK(Write(dir_ + "/unnamed", "synced, but its name is not", /*sync=*/true));
  ASSERT_OK(Write(dir_ + "/new", "new bytes", /*sync=*/true));
  ASSERT_OK(env_.RenameFile(dir_ + "/new", dir_ + "/old"));
  EXPECT_EQ(ReadFileOrDie(dir_ + "/old"), "new bytes");

  ASSERT_OK(env_.SimulateCrash());
  EXPECT_EQ(ReadFileOrDie(dir_ + "/durable"), "abc");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/unnamed"));
  EXPECT_EQ(ReadFileOrDie(dir_ + "/old"), "old bytes");
}

TEST_F(FaultInjectionEnvTest, ARenameWithItsDirectorySyncedSurvives) {
  ASSERT_OK(Write(dir_ + "/temp", "whole", /*sync=*/true));
  ASSERT_OK(RenameFile(dir_ + "/temp", dir_ + "/final", &env_));
  ASSERT_OK(env_.SimulateCrash());
  EXPECT_EQ(ReadFileOrDie(dir_ + "/final"), "whole");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/temp"));
}

TEST_F(FaultInjectionEnvTest, AStoppedMachineRefusesEverythingUntilTheCrashIsSimulated) {
  env_.CrashBeforeNthOp(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WritableFile> file,
                       env_.NewWritableFile(dir_ + "/f", WriteMode::kTruncate));
  EXPECT_THAT(file->Append("x"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("simulated crash")));
  EXPECT_TRUE(env_.crashed());
  EXPECT_THAT(env_.RenameFile(dir_ + "/f", dir_ + "/g"),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  EXPECT_FALSE(env_.FileExists(dir_ + "/f"));
  EXPECT_THAT(env_.SimulateCrash(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("still open")));
  file.reset();
  ASSERT_OK(env_.SimulateCrash());
  EXPECT_FALSE(env_.crashed());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/f"));
  EXPECT_OK(Write(dir_ + "/f", "again", /*sync=*/false));
}

Tensor Floats(std::vector<float> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<float>(values, TensorShape({n}));
}

absl::Status WriteBundle(const std::string& prefix, float value, Env* env) {
  absl::StatusOr<std::unique_ptr<BundleWriter>> writer = BundleWriter::Create(prefix, env);
  if (!writer.ok()) return writer.status();
  absl::Status status = (*writer)->Add("w", Floats({value, value + 1}));
  if (status.ok()) status = (*writer)->Add("b", Floats({-value}));
  if (status.ok()) status = (*writer)->Finish();
  return status;
}

// The value the checkpoint at `prefix` holds, read back whole and checked;
// NOT_FOUND when there is none.
absl::StatusOr<float> ReadBundle(const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<Tensor> w = (*reader)->Read("w");
  absl::StatusOr<Tensor> b = (*reader)->Read("b");
  if (!w.ok()) return w.status();
  if (!b.ok()) return b.status();
  const float value = w->data<float>()[0];
  if (w->data<float>()[1] != value + 1 || b->data<float>()[0] != -value) {
    return absl::DataLossError("the tensors of '" + prefix + "' disagree");
  }
  return value;
}

TEST_F(FaultInjectionEnvTest, ACrashBetweenTheDataFileAndTheIndexLeavesNoCheckpoint) {
  ASSERT_OK(WriteBundle(dir_ + "/model-1", 1, &env_));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<BundleWriter> writer,
                       BundleWriter::Create(dir_ + "/model-2", &env_));
  ASSERT_OK(writer->Add("w", Floats({2, 3})));
  // Finish: sync the data (1), rename it (2), sync the directory (3), then
  // open the index (4), where the machine stops.
  env_.CrashBeforeNthOp(4);
  EXPECT_THAT(writer->Finish(), StatusIs(absl::StatusCode::kUnavailable,
                                         HasSubstr(IndexFilename(dir_ + "/model-2"))));
  writer.reset();
  ASSERT_OK(env_.SimulateCrash());
  EXPECT_TRUE(std::filesystem::exists(DataFilename(dir_ + "/model-2", 0, 1)));
  EXPECT_THAT(ReadBundle(dir_ + "/model-2"), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  EXPECT_THAT(ReadBundle(dir_ + "/model-1"), ::rill::testing::IsOkAndHolds(1.0f));
}

// A crash at each operation of a write, to a new prefix and over an
// existing checkpoint: afterwards the prefix holds the old checkpoint, the
// new one, or none; never data of one under the index of the other.
TEST_F(FaultInjectionEnvTest, ACrashAtAnyPointOfABundleWriteLeavesNoneOrAWholeOne) {
  for (const bool replace : {false, true}) {
    SCOPED_TRACE(replace ? "over an existing checkpoint" : "to a new prefix");
    const std::string prefix = dir_ + (replace ? "/replaced" : "/fresh");
    const auto before = [&]() -> absl::Status {
      std::filesystem::remove_all(dir_);
      std::filesystem::create_directories(dir_);
      return replace ? WriteBundle(prefix, 1, Env::Posix()) : absl::OkStatus();
    };
    ASSERT_OK(before());
    FaultInjectionEnv counting(Env::Posix());
    ASSERT_OK(WriteBundle(prefix, 2, &counting));
    int64_t ops = 0;
    for (int op = 0; op < kNumFileOps; ++op) ops += counting.count(static_cast<FileOp>(op));
    for (int64_t crash_at = 1; crash_at <= ops + 1; ++crash_at) {
      SCOPED_TRACE(::testing::Message() << "crash before operation " << crash_at << " of " << ops);
      ASSERT_OK(before());
      env_.CrashBeforeNthOp(crash_at);
      const absl::Status written = WriteBundle(prefix, 2, &env_);
      ASSERT_OK(env_.SimulateCrash());
      const absl::StatusOr<float> read = ReadBundle(prefix);
      if (written.ok()) {
        EXPECT_THAT(read, ::rill::testing::IsOkAndHolds(2.0f));
      } else if (read.ok()) {
        EXPECT_THAT(*read, AnyOf(1.0f, 2.0f));
      } else {
        EXPECT_THAT(read, StatusIs(absl::StatusCode::kNotFound, ::testing::_)) << read.status();
      }
    }
  }
}

// A sharded save's merge renames each part's data file into place, then
// writes the one index: a crash at any point leaves no merged checkpoint
// or a whole one.
TEST_F(FaultInjectionEnvTest, ACrashAtAnyPointOfAMergeLeavesNoneOrAWholeOne) {
  const std::string parts = dir_ + "/model_temp/part";
  const std::string merged = dir_ + "/model";
  const auto write_parts = [&]() -> absl::Status {
    std::filesystem::remove_all(dir_);
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<BundleWriter>> writer =
          BundleWriter::Create(parts + std::to_string(i), Env::Posix());
      if (!writer.ok()) return writer.status();
      absl::Status status =
          i == 0 ? (*writer)->Add("w", Floats({2, 3})) : (*writer)->Add("b", Floats({-2}));
      if (status.ok()) status = (*writer)->Finish();
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  };
  const std::vector<std::string> inputs = {parts + "0", parts + "1"};
  ASSERT_OK(write_parts());
  FaultInjectionEnv counting(Env::Posix());
  ASSERT_OK(MergeBundles(inputs, merged, {.env = &counting}));
  ASSERT_THAT(ReadBundle(merged), ::rill::testing::IsOkAndHolds(2.0f));
  int64_t ops = 0;
  for (int op = 0; op < kNumFileOps; ++op) ops += counting.count(static_cast<FileOp>(op));
  for (int64_t crash_at = 1; crash_at <= ops + 1; ++crash_at) {
    SCOPED_TRACE(::testing::Message() << "crash before operation " << crash_at << " of " << ops);
    ASSERT_OK(write_parts());
    env_.CrashBeforeNthOp(crash_at);
    const absl::Status status = MergeBundles(inputs, merged, {.env = &env_});
    ASSERT_OK(env_.SimulateCrash());
    const absl::StatusOr<float> read = ReadBundle(merged);
    if (status.ok()) {
      EXPECT_THAT(read, ::rill::testing::IsOkAndHolds(2.0f));
    } else if (!read.ok()) {
      EXPECT_THAT(read, StatusIs(absl::StatusCode::kNotFound, ::testing::_)) << read.status();
    }
  }
}

}  // namespace
}  // namespace rill::io
