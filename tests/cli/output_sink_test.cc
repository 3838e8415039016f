// OutputSink: the launcher's output, written without ever blocking, to a
// reader that keeps up, one that stops reading, one that has gone, and a file.
#include "cli/output_sink.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill::cli {
namespace {

// A pipe: the sink writes into `in`, the test reads from `out` (non-blocking).
class Pipe {
 public:
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) == 0) {
      out = fds[0];
      in = fds[1];
      fcntl(out, F_SETFL, O_NONBLOCK);
    }
  }
  ~Pipe() {
    if (out >= 0) close(out);
    if (in >= 0) close(in);
  }

  // What the pipe holds now.
  std::string ReadAvailable() const {
    std::string text;
    char buffer[64 * 1024];
    ssize_t n;
    while ((n = read(out, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
    return text;
  }

  int out = -1;
  int in = -1;
};

TEST(OutputSink, WritesAtOnceToAReaderThatKeepsUp) {
  Pipe pipe;
  OutputSink sink(pipe.in);
  sink.Write("[worker 0] step 1\n");
  EXPECT_FALSE(sink.pending());
  EXPECT_EQ(pipe.ReadAvailable(), "[worker 0] step 1\n");
}

// Writes return at once; what the pipe cannot take waits, up to 4 limits,
// and what comes after is dropped whole and counted. Once the reader reads
// again, the rest comes through in order.
TEST(OutputSink, NeverBlocksOnAReaderThatStopsReading) {
  Pipe pipe;
  constexpr size_t kLimit = 256 * 1024;
  OutputSink sink(pipe.in, kLimit);
  std::string written;
  for (int i = 0; i < 100; ++i) {
    const std::string chunk(16 * 1024, static_cast<char>('a' + i % 26));
    sink.Write(chunk);
    written += chunk;
  }
  EXPECT_TRUE(sink.pending());
  EXPECT_TRUE(sink.full());
  EXPECT_GT(sink.dropped(), 0u);
  EXPECT_EQ(sink.dropped() % (16 * 1024), 0u);
  std::string read;
  for (int i = 0; i < 1000 && (sink.pending() || read.empty()); ++i) {
    read += pipe.ReadAvailable();
    sink.Flush();
  }
  read += pipe.ReadAvailable();
  EXPECT_FALSE(sink.pending());
  EXPECT_GE(read.size(), 4 * kLimit);
  EXPECT_EQ(read.size() + sink.dropped(), written.size());
  EXPECT_TRUE(read == written.substr(0, read.size()));
}

// The launcher's stdout is shared with its parent: it stays blocking.
TEST(OutputSink, LeavesTheFileDescriptionItWasGivenAsItWas) {
  Pipe pipe;
  OutputSink sink(pipe.in);
  sink.Write(std::string(1 << 20, 'x'));
  EXPECT_TRUE(sink.pending());
  EXPECT_EQ(fcntl(pipe.in, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(sink.fd(), pipe.in);
}

TEST(OutputSink, AbandonCountsWhatTheReaderDidNotTake) {
  Pipe pipe;
  OutputSink sink(pipe.in);
  const std::string text(1 << 20, 'x');
  sink.Write(text);
  const size_t taken = pipe.ReadAvailable().size();
  sink.Abandon();
  EXPECT_FALSE(sink.pending());
  EXPECT_EQ(sink.dropped(), text.size() - taken);
}

// `rill launch | head`: the lines are not wanted, and nothing is counted.
TEST(OutputSink, AReaderThatHasGoneTakesNothing) {
  signal(SIGPIPE, SIG_IGN);
  Pipe pipe;
  OutputSink sink(pipe.in);
  close(pipe.out);
  pipe.out = -1;
  sink.Write("lost\n");
  sink.Write(std::string(1 << 20, 'x'));
  EXPECT_FALSE(sink.pending());
  EXPECT_EQ(sink.dropped(), 0u);
}

TEST(OutputSink, WritesAFileAsItIs) {
  const std::string path = testing::MakeTempDir() + "/out";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  {
    OutputSink sink(fd);
    sink.Write("a\n");
    sink.Write(std::string(3 << 20, 'y'));
    EXPECT_FALSE(sink.pending());
    EXPECT_EQ(sink.fd(), fd);
  }
  close(fd);
  EXPECT_EQ(testing::ReadFileOrDie(path), "a\n" + std::string(3 << 20, 'y'));
}

}  // namespace
}  // namespace rill::cli
