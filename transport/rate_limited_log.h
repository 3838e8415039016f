// A log that a peer cannot flood: at most so many lines a second reach the
// sink, and the lines held back are counted in the next one that passes.
#ifndef RILL_TRANSPORT_RATE_LIMITED_LOG_H_
#define RILL_TRANSPORT_RATE_LIMITED_LOG_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"

namespace rill {

// Thread safety: all methods may be called concurrently.
class RateLimitedLog {
 public:
  // `per_second` lines a second reach `sink` (stderr when null).
  explicit RateLimitedLog(LogSink* sink, int per_second = 20)
      : sink_(OrDefault(sink)), per_second_(per_second) {}

  template <typename... Args>
  void Log(const absl::FormatSpec<Args...>& format, const Args&... args) {
    if (Allow()) Write(absl::StrFormat(format, args...));
  }

  // Lines held back since the sink last got one.
  int64_t held_back();
  LogSink* sink() const { return sink_; }

 private:
  // Whether a line may go out now (counted as held back when not).
  bool Allow();
  void Write(std::string line);

  LogSink* const sink_;
  const int per_second_;
  absl::Mutex mu_;
  int64_t second_ ABSL_GUARDED_BY(mu_) = 0;
  int written_this_second_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t held_back_ ABSL_GUARDED_BY(mu_) = 0;
};

// Peer-supplied text for a log line or a reply: at most `max_bytes` of it,
// escaped, and its full length when it was cut. A peer that sends a
// megabyte of method name makes a line of a few hundred bytes.
std::string PeerText(std::string_view text, size_t max_bytes = 128);

// Lets protobuf's own log lines (a parse of a peer's message that fails on
// a string field's UTF-8 logs one each time) reach stderr a few a second,
// for the process's life; later calls do nothing. Stderr, not a server's
// sink: a handler is one per process and outlives any server.
void LimitProtobufLogs();

}  // namespace rill

#endif  // RILL_TRANSPORT_RATE_LIMITED_LOG_H_
