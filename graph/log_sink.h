// LogSink: where servers, sessions, training hooks and tools write the lines
// a person reads, as LevelDB's Options::info_log: one type, passed once, stderr by default.
#ifndef RILL_GRAPH_LOG_SINK_H_
#define RILL_GRAPH_LOG_SINK_H_

#include <cstdio>
#include <string_view>

#include "absl/strings/str_format.h"

namespace rill {

// Thread safety: a sink is written from any thread; each line goes out
// whole, flushed, never interleaved with another.
class LogSink {
 public:
  virtual ~LogSink() = default;

  // One line, without its newline.
  virtual void WriteLine(std::string_view line) = 0;
  // Whole lines at once (a report), the last one's newline optional.
  void WriteLines(std::string_view text) {
    if (text.ends_with('\n')) text.remove_suffix(1);
    if (!text.empty()) WriteLine(text);
  }

  template <typename... Args>
  void Log(const absl::FormatSpec<Args...>& format, const Args&... args) {
    WriteLine(absl::StrFormat(format, args...));
  }

  // The default: standard error.
  static LogSink* Stderr();
  // Takes every line and writes none.
  static LogSink* Discard();
};

// `sink`, or the default when it is null: what every options struct's
// `LogSink* log = nullptr` means.
inline LogSink* OrDefault(LogSink* sink) { return sink != nullptr ? sink : LogSink::Stderr(); }

// Lines to a stdio file the caller keeps open for the sink's life.
class FileLogSink final : public LogSink {
 public:
  explicit FileLogSink(std::FILE* file) : file_(file) {}
  void WriteLine(std::string_view line) override;

 private:
  std::FILE* const file_;
};

}  // namespace rill

#endif  // RILL_GRAPH_LOG_SINK_H_
