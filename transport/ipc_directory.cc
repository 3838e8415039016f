#include "transport/ipc_directory.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace rill::rpc_internal {
namespace {

constexpr char kPrefix[] = "rill-rpc-";
constexpr char kSocketFile[] = "rpc.sock";
// Longest ipc socket path: sockaddr_un holds 108 bytes with the NUL; the
// directory's own name and the socket file need about 40.
constexpr size_t kMaxBaseLength = 64;

bool ProcessIsGone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// True when `path` names no socket file, or one that refuses connections.
bool NoOneListens(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return !error;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = path.string();
  if (name.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool refused =
      connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 &&
      errno == ECONNREFUSED;
  close(fd);
  return refused;
}

}  // namespace

std::string IpcBaseDirectory() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  return base.size() <= kMaxBaseLength ? base : "/tmp";
}

absl::StatusOr<std::string> MakeIpcDirectory(const std::string& base) {
  RemoveStaleIpcDirectories(base);
  std::string path = absl::StrFormat("%s/%s%d-XXXXXX", base, kPrefix, getpid());
  if (mkdtemp(path.data()) == nullptr) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot create a directory for the ipc endpoint under %s: %s", base, std::strerror(errno)));
  }
  return path;
}

int RemoveStaleIpcDirectories(const std::string& base) {
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kPrefix)) continue;
    const size_t dash = name.find('-', sizeof(kPrefix) - 1);
    int pid = 0;
    if (dash == std::string::npos ||
        !absl::SimpleAtoi(name.substr(sizeof(kPrefix) - 1, dash - (sizeof(kPrefix) - 1)), &pid) ||
        pid <= 0 || !ProcessIsGone(pid) || !NoOneListens(entry.path() / kSocketFile)) {
      continue;
    }
    std::error_code ignored;
    std::filesystem::remove(entry.path() / kSocketFile, ignored);
    // Fails, and keeps the directory, when something else was put in it.
    if (std::filesystem::remove(entry.path(), ignored)) ++removed;
  }
  return removed;
}

}  // namespace rill::rpc_internal
