#include "transport/ipc_directory.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "tests/test_util.h"

namespace rill::rpc_internal {
namespace {

namespace fs = std::filesystem;

// The pid of a child that has exited and been reaped.
pid_t GonePid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// A unix socket bound at `path`; listening when `listen_on` (else bound
// and closed, as a killed server leaves it). Returns the fd or -1.
int BindSocket(const fs::path& path, bool listen_on) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return -1;
  }
  if (!listen_on) {
    close(fd);
    return 0;
  }
  return listen(fd, 1) == 0 ? fd : -1;
}

fs::path ServerDirectory(const std::string& base, pid_t pid, const std::string& suffix) {
  const fs::path dir = fs::path(base) / absl::StrFormat("rill-rpc-%d-%s", pid, suffix);
  fs::create_directories(dir);
  return dir;
}

class IpcDirectoryTest : public ::testing::Test {
 protected:
  void TearDown() override { fs::remove_all(base_); }
  const std::string base_ = testing::MakeTempDir();
};

TEST_F(IpcDirectoryTest, MakesOneDirectoryPerServerNamedAfterItsProcess) {
  ASSERT_OK_AND_ASSIGN(const std::string first, MakeIpcDirectory(base_));
  ASSERT_OK_AND_ASSIGN(const std::string second, MakeIpcDirectory(base_));
  EXPECT_NE(first, second);
  const std::string prefix = absl::StrFormat("%s/rill-rpc-%d-", base_, getpid());
  EXPECT_TRUE(first.starts_with(prefix)) << first;
  EXPECT_TRUE(fs::is_directory(first));
  EXPECT_TRUE(fs::is_directory(second));
}

TEST_F(IpcDirectoryTest, RemovesWhatAKilledServerLeft) {
  const fs::path dead = ServerDirectory(base_, GonePid(), "abc123");
  ASSERT_EQ(BindSocket(dead / "rpc.sock", /*listen_on=*/false), 0);
  const fs::path empty = ServerDirectory(base_, GonePid(), "def456");
  EXPECT_EQ(RemoveStaleIpcDirectories(base_), 2);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(empty));
}

TEST_F(IpcDirectoryTest, MakingADirectorySweepsStaleOnes) {
  const fs::path dead = ServerDirectory(base_, GonePid(), "abc123");
  ASSERT_EQ(BindSocket(dead / "rpc.sock", /*listen_on=*/false), 0);
  ASSERT_OK(MakeIpcDirectory(base_));
  EXPECT_FALSE(fs::exists(dead));
}

TEST_F(IpcDirectoryTest, KeepsLiveListenedAndForeignDirectories) {
  const fs::path live = ServerDirectory(base_, getpid(), "abc123");
  ASSERT_EQ(BindSocket(live / "rpc.sock", /*listen_on=*/false), 0);
  // Its process looks gone (another pid namespace), but it still serves.
  const fs::path listened = ServerDirectory(base_, GonePid(), "def456");
  const int listener = BindSocket(listened / "rpc.sock", /*listen_on=*/true);
  ASSERT_GT(listener, 0);
  // Holds more than a socket: not ours to delete.
  const fs::path cluttered = ServerDirectory(base_, GonePid(), "ghi789");
  std::FILE* file = std::fopen((cluttered / "notes").c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  const fs::path unrelated = fs::path(base_) / "rill-rpc-XXXXXX";
  fs::create_directories(unrelated);
  const fs::path other = fs::path(base_) / "something-else";
  fs::create_directories(other);

  EXPECT_EQ(RemoveStaleIpcDirectories(base_), 0);
  close(listener);
  for (const fs::path& kept : {live, listened, cluttered, unrelated, other}) {
    EXPECT_TRUE(fs::exists(kept)) << kept;
  }
}

TEST_F(IpcDirectoryTest, AMissingBaseIsNotAnError) {
  EXPECT_EQ(RemoveStaleIpcDirectories(base_ + "/missing"), 0);
  EXPECT_FALSE(MakeIpcDirectory(base_ + "/missing").ok());
}

}  // namespace
}  // namespace rill::rpc_internal
