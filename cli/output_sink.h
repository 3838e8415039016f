// OutputSink: the launcher's stdout or stderr, written without ever
// blocking, so that a reader that stops reading cannot keep `rill launch`
// from its signals and its tasks.
#ifndef RILL_CLI_OUTPUT_SINK_H_
#define RILL_CLI_OUTPUT_SINK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rill::cli {

// What is written goes out at once as far as the reader takes it; the rest
// waits in a buffer and goes out by Flush, when poll() says fd() is
// writable. The launcher stops reading its tasks' output into a sink that
// is full(), so that tasks wait for a slow reader as they would writing to
// it themselves. What comes while the buffer holds 4 * `limit` bytes (the
// launcher's own lines, a task's last lines, what tasks write while they
// are stopped) is dropped, whole writes at a time, and counted. A reader
// that has gone (EPIPE: the launcher piped into `head`) takes nothing more,
// and nothing is counted for it: the lines are not wanted.
//
// Never blocking: a pipe, FIFO or terminal is opened again (through
// /proc/self/fd) as a file description of the launcher's own, with
// O_NONBLOCK, leaving the one the launcher was given, which its parent
// shares, as it was. Where that fails, at most PIPE_BUF bytes are written
// at a time, and only when poll() says the fd is writable, which a pipe
// then takes without waiting. A socket is written with MSG_DONTWAIT; a
// regular file as it is.
//
// Thread safety: none; one writer.
class OutputSink {
 public:
  static constexpr size_t kDefaultLimit = 1 << 20;

  explicit OutputSink(int fd, size_t limit = kDefaultLimit);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  void Write(std::string_view text);
  // Writes what the reader takes now.
  void Flush();
  // Drops what the reader has not taken, counting it.
  void Abandon();

  // The fd to poll for POLLOUT while pending().
  int fd() const { return fd_; }
  bool pending() const { return head_ < buffer_.size(); }
  bool full() const { return buffer_.size() - head_ >= limit_; }
  uint64_t dropped() const { return dropped_; }

 private:
  enum class Mode { kAsIs, kNonBlocking, kPollFirst, kSocket };

  // Constant after construction.
  int fd_;
  int own_fd_ = -1;  // The reopened description, when there is one; fd_ then.
  Mode mode_ = Mode::kAsIs;
  size_t limit_;

  std::string buffer_;  // From head_ on: what the reader has yet to take.
  size_t head_ = 0;
  bool gone_ = false;  // The reader has gone.
  uint64_t dropped_ = 0;
};

}  // namespace rill::cli

#endif  // RILL_CLI_OUTPUT_SINK_H_
