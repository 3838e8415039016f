#include "transport/rate_limited_log.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "google/protobuf/stubs/logging.h"

namespace rill {

bool RateLimitedLog::Allow() {
  const int64_t second = absl::ToUnixSeconds(absl::Now());
  absl::MutexLock lock(&mu_);
  if (second != second_) {
    second_ = second;
    written_this_second_ = 0;
  }
  if (written_this_second_ < per_second_) {
    ++written_this_second_;
    return true;
  }
  ++held_back_;
  return false;
}

void RateLimitedLog::Write(std::string line) {
  int64_t held = 0;
  {
    absl::MutexLock lock(&mu_);
    std::swap(held, held_back_);
  }
  if (held > 0) {
    line += absl::StrFormat(" (%d similar lines were not logged, at most %d a second)", held,
                            per_second_);
  }
  sink_->WriteLine(line);
}

int64_t RateLimitedLog::held_back() {
  absl::MutexLock lock(&mu_);
  return held_back_;
}

namespace {

RateLimitedLog* protobuf_log = nullptr;  // Set once, before the handler is.

void ProtobufLogHandler(google::protobuf::LogLevel level, const char* filename, int line,
                        const std::string& message) {
  if (level < google::protobuf::LOGLEVEL_WARNING) return;
  protobuf_log->Log("protobuf %s:%d: %s", filename, line, PeerText(message, 512));
}

}  // namespace

void LimitProtobufLogs() {
  static const bool installed = [] {
    protobuf_log = new RateLimitedLog(LogSink::Stderr(), 5);  // For the process's life.
    google::protobuf::SetLogHandler(ProtobufLogHandler);
    return true;
  }();
  (void)installed;
}

std::string PeerText(std::string_view text, size_t max_bytes) {
  const absl::string_view kept(text.data(), std::min(text.size(), max_bytes));
  if (kept.size() == text.size()) return absl::CHexEscape(kept);
  return absl::StrFormat("%s... (%d bytes)", absl::CHexEscape(kept), text.size());
}

}  // namespace rill
