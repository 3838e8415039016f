#include "tests/test_util.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace rill::testing {
namespace {

std::string EnvOrDie(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    ADD_FAILURE() << name << " is not set; run the tests through meson test";
    return "";
  }
  return value;
}

}  // namespace

std::string TestDataDir() { return EnvOrDie("RILL_TESTDATA"); }
std::string SourceRoot() { return EnvOrDie("RILL_SOURCE_ROOT"); }

LogSink* QuietLog() { return LogSink::Discard(); }

CapturedLog::CapturedLog() : file_(std::tmpfile()), sink_(file_) {}
CapturedLog::~CapturedLog() { std::fclose(file_); }

std::string CapturedLog::Read() const {
  std::fflush(file_);
  std::rewind(file_);
  std::string text;
  for (int c; (c = std::fgetc(file_)) != EOF;) text.push_back(static_cast<char>(c));
  return text;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

Tensor RegressionXs() {
  std::vector<float> x(100);
  for (int i = 0; i < 100; ++i) x[i] = -1.0f + 2.0f * static_cast<float>(i) / 100.0f;
  return Tensor::FromVector<float>(x, {100});
}

Tensor RegressionYs() {
  const Tensor x = RegressionXs();
  std::vector<float> y(100);
  for (int i = 0; i < 100; ++i) y[i] = 0.1f * x.data<float>()[i] + 0.3f;
  return Tensor::FromVector<float>(y, {100});
}

Tensor LineXs() {
  Tensor x(DT_FLOAT, TensorShape({16}));
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i) / 4 - 2;
  return x;
}

Tensor LineYs() {
  const Tensor x = LineXs();
  Tensor y(DT_FLOAT, TensorShape({16}));
  for (int i = 0; i < 16; ++i) y.data<float>()[i] = 2 * x.data<float>()[i] + 10;
  return y;
}

Tensor RandomTensor(const TensorShape& shape, int seed) {
  Tensor t(DT_FLOAT, shape);
  uint32_t state = 2654435761u * static_cast<uint32_t>(seed + 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  return t;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string MakeTempDir() {
  std::random_device seed;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("rill_test_" + std::to_string(seed()) + std::to_string(seed()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

ProgramResult RunProgram(const std::vector<std::string>& args) {
  const std::string dir = MakeTempDir();
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  std::vector<std::string> argv_strings = args;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) {
      _exit(127);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ProgramResult result;
  result.exited = WIFEXITED(status);
  result.exit_code = result.exited ? WEXITSTATUS(status) : -1;
  result.out = ReadFileOrDie(out_path);
  result.err = ReadFileOrDie(err_path);
  std::filesystem::remove_all(dir);
  return result;
}

}  // namespace rill::testing
