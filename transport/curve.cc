#include "transport/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "graph/status_macros.h"
#include "zmq_addon.hpp"

namespace rill {
namespace {

constexpr size_t kZ85KeyLength = 40;
// Key files are a few lines; anything longer is not one.
constexpr size_t kMaxKeyFileBytes = size_t{1} << 20;

absl::Status ErrnoError(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// The whole of a small regular file; NOT_FOUND when it does not exist.
absl::StatusOr<std::string> ReadKeyFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    return ErrnoError(absl::StrCat("cannot open ", path));
  }
  struct stat st;
  std::string text;
  absl::Status status;
  if (fstat(fd, &st) != 0) {
    status = ErrnoError(absl::StrCat("cannot stat ", path));
  } else if (!S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > kMaxKeyFileBytes) {
    status = absl::InvalidArgumentError(absl::StrFormat(
        "%s is not a key file (not a regular file of at most %d bytes)", path, kMaxKeyFileBytes));
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

// INVALID_ARGUMENT naming `where` unless `key` is a Z85 CURVE key.
absl::Status CheckZ85Key(std::string_view key, const std::string& where) {
  std::array<uint8_t, 32> decoded;
  if (key.size() != kZ85KeyLength ||
      zmq_z85_decode(decoded.data(), std::string(key).c_str()) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: '%s' is not a CURVE key (40 characters of Z85 text)", where, key));
  }
  return absl::OkStatus();
}

// The one key of a key file.
absl::StatusOr<std::string> ReadOneKey(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadKeyFile(path));
  const std::string key(absl::StripAsciiWhitespace(text));
  RETURN_IF_ERROR(CheckZ85Key(key, path));
  return key;
}

// The keys of an authorized_keys file, one a line.
absl::StatusOr<std::set<std::string>> ReadAuthorizedKeys(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadKeyFile(path));
  std::set<std::string> keys;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    // Z85 has '#' among its characters: only a whole line is a comment.
    if (line.empty() || line.front() == '#') continue;
    const std::string key(line);
    RETURN_IF_ERROR(CheckZ85Key(key, absl::StrFormat("%s:%d", path, line_number)));
    keys.insert(key);
  }
  return keys;
}

// Creates `path` holding `text`, failing when it exists.
absl::Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat(path, " exists: a key is never overwritten"));
    }
    return ErrnoError(absl::StrCat("cannot create ", path));
  }
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!written || !synced) return ErrnoError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status AppendLine(const std::string& path, const std::string& line) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(absl::StrCat("cannot open ", path));
  const std::string text = line + "\n";
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!written || !synced) return ErrnoError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

absl::StatusOr<CurveKeys> LoadCurveKeys(const std::string& dir) {
  if (!CurveAvailable()) {
    return absl::FailedPreconditionError("this libzmq was built without CURVE");
  }
  CurveKeys keys;
  ASSIGN_OR_RETURN(keys.public_key, ReadOneKey(dir + "/public.key"));
  ASSIGN_OR_RETURN(keys.secret_key, ReadOneKey(dir + "/secret.key"));
  std::array<char, kZ85KeyLength + 1> derived{};
  if (zmq_curve_public(derived.data(), keys.secret_key.c_str()) != 0 ||
      keys.public_key != derived.data()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s/secret.key is not the secret key of %s/public.key", dir, dir));
  }
  absl::StatusOr<std::string> server = ReadOneKey(dir + "/server_public.key");
  if (server.ok()) {
    keys.server_public_key = *std::move(server);
  } else if (absl::IsNotFound(server.status())) {
    keys.server_public_key = keys.public_key;
  } else {
    return server.status();
  }
  absl::StatusOr<std::set<std::string>> authorized = ReadAuthorizedKeys(dir + "/authorized_keys");
  if (authorized.ok()) {
    keys.authorized = *std::move(authorized);
  } else if (!absl::IsNotFound(authorized.status())) {
    return authorized.status();
  }
  return keys;
}

absl::StatusOr<std::string> WriteCurveKeys(const std::string& dir, const std::string& server_dir) {
  if (!CurveAvailable()) {
    return absl::FailedPreconditionError("this libzmq was built without CURVE");
  }
  CurveKeys cluster;
  if (!server_dir.empty()) {
    ASSIGN_OR_RETURN(cluster, LoadCurveKeys(server_dir));
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError(absl::StrCat("cannot make ", dir));
  }
  std::array<char, kZ85KeyLength + 1> public_key{}, secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    return ErrnoError("zmq_curve_keypair");
  }
  // The secret first: a directory with a public key has a usable pair.
  RETURN_IF_ERROR(WriteNewFile(dir + "/secret.key", absl::StrCat(secret_key.data(), "\n"), 0600));
  RETURN_IF_ERROR(WriteNewFile(dir + "/public.key", absl::StrCat(public_key.data(), "\n"), 0644));
  if (server_dir.empty()) {
    RETURN_IF_ERROR(AppendLine(dir + "/authorized_keys", public_key.data()));
  } else {
    RETURN_IF_ERROR(
        WriteNewFile(dir + "/server_public.key", absl::StrCat(cluster.public_key, "\n"), 0644));
    RETURN_IF_ERROR(AppendLine(server_dir + "/authorized_keys", public_key.data()));
  }
  return std::string(public_key.data());
}

void UseCurveAsClient(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
}

}  // namespace rill
