#include "io/posix_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill::io {
namespace {

using ::rill::testing::MakeTempDir;
using ::rill::testing::ReadFileOrDie;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

class PosixFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  const std::string dir_ = MakeTempDir();
};

TEST(IsPlainRelativePath, AcceptsOnlyNamesThatStayBelow) {
  for (const char* path : {"a", "a.npy", "a/b/c.npy", "...npy", "a..b", ".hidden"}) {
    EXPECT_TRUE(IsPlainRelativePath(path)) << path;
  }
  for (const char* path : {"", "/a", "a/", "a//b", ".", "..", "../a", "a/../b", "a/./b", "a/.."}) {
    EXPECT_FALSE(IsPlainRelativePath(path)) << path;
  }
}

TEST_F(PosixFile, CreateBeneathMakesTheDirectoriesItNames) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WritableFile> file,
                       WritableFile::CreateBeneath(dir_ + "/out", "a/b/c.txt"));
  EXPECT_EQ(file->path(), dir_ + "/out/a/b/c.txt");
  ASSERT_OK(file->Append("hello"));
  ASSERT_OK(file->Close());
  EXPECT_EQ(ReadFileOrDie(dir_ + "/out/a/b/c.txt"), "hello");
}

TEST_F(PosixFile, CreateBeneathRefusesPathsOutOfTheDirectory) {
  EXPECT_THAT(WritableFile::CreateBeneath(dir_ + "/out", "../x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'../x' is not a relative")));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out"));
}

TEST_F(PosixFile, CreateBeneathFollowsNoSymbolicLink) {
  const std::string out = dir_ + "/out", elsewhere = dir_ + "/elsewhere";
  std::filesystem::create_directories(out + "/real");
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_directory_symlink(elsewhere, out + "/real/dir");
  std::filesystem::create_symlink(elsewhere + "/f", out + "/file");
  EXPECT_THAT(WritableFile::CreateBeneath(out, "real/dir/f"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'" + out + "/real/dir': it is a symbolic link")));
  EXPECT_THAT(WritableFile::CreateBeneath(out, "file"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'" + out + "/file': it is a symbolic link")));
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
}

TEST_F(PosixFile, RandomAccessFileRefusesAFifoWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(RandomAccessFile::Open(fifo),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'" + fifo + "': a FIFO, not a regular file")));
  EXPECT_THAT(ReadFileToString(dir_), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("a directory, not a regular file")));
}

}  // namespace
}  // namespace rill::io
