#include "graph/log_sink.h"

#include <string>

namespace rill {
namespace {

class DiscardSink final : public LogSink {
 public:
  void WriteLine(std::string_view) override {}
};

}  // namespace

void FileLogSink::WriteLine(std::string_view line) {
  // One write per line: stdio locks the file for it, so lines from
  // several threads never interleave.
  std::string whole(line);
  whole.push_back('\n');
  std::fwrite(whole.data(), 1, whole.size(), file_);
  std::fflush(file_);
}

LogSink* LogSink::Stderr() {
  static LogSink* const sink = new FileLogSink(stderr);
  return sink;
}

LogSink* LogSink::Discard() {
  static LogSink* const sink = new DiscardSink();
  return sink;
}

}  // namespace rill
