// The POSIX Env, and the one output-path check every rename-into-place
// writer asks: devices, FIFOs, sockets and directories are never replaced.
// Device nodes are private ones made with mknod in a temporary folder.
#include "io/env.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/posix_file.h"
#include "tests/test_util.h"

namespace rill::io {
namespace {

using ::rill::testing::MakeTempDir;
using ::rill::testing::ReadFileOrDie;
using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EnvTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  mode_t TypeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & S_IFMT;
  }

  // A node of `type` at dir_/`name`; empty when this machine does not let
  // us make one (mknod needs privileges).
  std::string MakeNode(const std::string& name, mode_t type) {
    const std::string path = dir_ + "/" + name;
    int rc = -1;
    if (type == S_IFCHR) rc = mknod(path.c_str(), S_IFCHR | 0600, makedev(1, 3));
    if (type == S_IFBLK) rc = mknod(path.c_str(), S_IFBLK | 0600, makedev(7, 200));
    if (type == S_IFIFO) rc = mkfifo(path.c_str(), 0600);
    if (type == S_IFDIR) rc = mkdir(path.c_str(), 0700);
    if (type == S_IFSOCK) {
      const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      if (fd >= 0 && path.size() < sizeof(address.sun_path)) {
        std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
        rc = bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
      }
      if (fd >= 0) close(fd);
    }
    return rc == 0 ? path : "";
  }

  const std::string dir_ = MakeTempDir();
};

struct NodeKind {
  mode_t type;
  const char* name;
};
constexpr NodeKind kNodeKinds[] = {{S_IFCHR, "a character device"},
                                   {S_IFBLK, "a block device"},
                                   {S_IFIFO, "a FIFO"},
                                   {S_IFSOCK, "a socket"},
                                   {S_IFDIR, "a directory"}};

TEST_F(EnvTest, CheckOutputPathAcceptsMissingAndRegularFilesAndLinks) {
  EXPECT_OK(CheckOutputPath(dir_ + "/missing"));
  EXPECT_OK(CheckOutputPath(dir_ + "/missing/below"));
  ASSERT_OK(WriteFileAtomically(dir_ + "/file", "x"));
  EXPECT_OK(CheckOutputPath(dir_ + "/file"));
  std::filesystem::create_symlink(dir_ + "/file", dir_ + "/link");
  EXPECT_OK(CheckOutputPath(dir_ + "/link"));
}

TEST_F(EnvTest, WritersRefuseToReplaceWhatIsNotARegularFile) {
  std::vector<std::string> skipped;
  for (const NodeKind& kind : kNodeKinds) {
    SCOPED_TRACE(kind.name);
    const std::string node = MakeNode("node", kind.type);
    if (node.empty()) {
      ASSERT_TRUE(kind.type == S_IFCHR || kind.type == S_IFBLK)
          << "cannot make " << kind.name << ": " << std::strerror(errno);
      skipped.push_back(kind.name);
      continue;
    }
    const std::string message =
        "'" + node + "' is " + kind.name + ", not a regular file: refusing to replace it";
    EXPECT_THAT(CheckOutputPath(node), StatusIs(absl::StatusCode::kInvalidArgument, message));
    EXPECT_THAT(WriteFileAtomically(node, "replaced"),
                StatusIs(absl::StatusCode::kInvalidArgument, message));
    ASSERT_OK(WriteFileAtomically(dir_ + "/source", "data"));
    EXPECT_THAT(RenameFile(dir_ + "/source", node),
                StatusIs(absl::StatusCode::kInvalidArgument, message));
    EXPECT_THAT(WritableFile::CreateBeneath(dir_, "node"),
                StatusIs(absl::StatusCode::kInvalidArgument, message));
    // Still what it was, and no temporary file left beside it.
    EXPECT_EQ(TypeOf(node), kind.type);
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    EXPECT_THAT(names, ElementsAre("node", "source"));
    std::filesystem::remove_all(node);
    std::filesystem::remove(dir_ + "/source");
  }
  if (!skipped.empty()) GTEST_SKIP() << "mknod refused (it needs root): " << skipped.front();
}

TEST_F(EnvTest, WriteFileAtomicallyReplacesARegularFileWhole) {
  const std::string path = dir_ + "/state";
  ASSERT_OK(WriteFileAtomically(path, "old"));
  ASSERT_OK(WriteFileAtomically(path, "new contents"));
  EXPECT_EQ(ReadFileOrDie(path), "new contents");
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> names, Env::Default()->GetChildren(dir_));
  EXPECT_THAT(names, ElementsAre("state"));
}

TEST_F(EnvTest, PosixEnvListsCreatesRenamesAndDeletes) {
  Env* env = Env::Default();
  ASSERT_OK(env->CreateDir(dir_ + "/a/b"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WritableFile> file,
                       env->NewWritableFile(dir_ + "/a/b/f", WriteMode::kCreateNew));
  ASSERT_OK(file->Append("hello"));
  ASSERT_OK(file->Sync());
  ASSERT_OK(file->Close());
  EXPECT_THAT(env->NewWritableFile(dir_ + "/a/b/f", WriteMode::kCreateNew),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(dir_ + "/a/b/f")));
  ASSERT_OK(env->RenameFile(dir_ + "/a/b/f", dir_ + "/a/g"));
  ASSERT_OK(env->SyncDir(dir_ + "/a"));
  EXPECT_THAT(env->GetChildren(dir_ + "/a"), ::rill::testing::IsOkAndHolds(ElementsAre("b", "g")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RandomAccessFile> read,
                       env->NewRandomAccessFile(dir_ + "/a/g"));
  EXPECT_EQ(read->size(), 5u);
  ASSERT_OK(env->DeleteFile(dir_ + "/a/g"));
  EXPECT_FALSE(env->FileExists(dir_ + "/a/g"));
  EXPECT_THAT(env->DeleteFile(dir_ + "/a/g"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir_ + "/a/g")));
  ASSERT_OK(env->DeleteDir(dir_ + "/a/b"));
  EXPECT_THAT(env->GetChildren(dir_ + "/missing"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir_ + "/missing")));
}

// A test's Env is what every caller without one of its own gets.
TEST_F(EnvTest, ScopedDefaultEnvInstallsAndRestores) {
  class CountingEnv final : public Env {
   public:
    absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                  WriteMode mode) override {
      ++opened;
      return Env::Posix()->NewWritableFile(path, mode);
    }
    absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
        const std::string& path) override {
      return Env::Posix()->NewRandomAccessFile(path);
    }
    bool FileExists(const std::string& path) override { return Env::Posix()->FileExists(path); }
    absl::Status DeleteFile(const std::string& path) override {
      return Env::Posix()->DeleteFile(path);
    }
    absl::Status CreateDir(const std::string& path) override {
      return Env::Posix()->CreateDir(path);
    }
    absl::Status DeleteDir(const std::string& path) override {
      return Env::Posix()->DeleteDir(path);
    }
    absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
      return Env::Posix()->GetChildren(dir);
    }
    absl::Status RenameFile(const std::string& from, const std::string& to) override {
      return Env::Posix()->RenameFile(from, to);
    }
    absl::Status SyncDir(const std::string& dir) override { return Env::Posix()->SyncDir(dir); }
    int opened = 0;
  };
  CountingEnv counting;
  {
    ScopedDefaultEnv scoped(&counting);
    EXPECT_EQ(Env::Default(), &counting);
    ASSERT_OK(WriteFileAtomically(dir_ + "/x", "1"));
    ASSERT_OK(WritableFile::Create(dir_ + "/y").status());
  }
  EXPECT_EQ(counting.opened, 2);
  EXPECT_EQ(Env::Default(), Env::Posix());
}

}  // namespace
}  // namespace rill::io
