#include "cli/line_prefixer.h"

#include <algorithm>
#include <utility>

namespace rill::cli {

LinePrefixer::LinePrefixer(std::string prefix, size_t max_line_bytes)
    : prefix_(std::move(prefix)), max_line_bytes_(std::max<size_t>(max_line_bytes, 1)) {}

void LinePrefixer::EmitLine(std::string& out) {
  out += prefix_;
  out += line_;
  out += '\n';
  line_.clear();
  redraw_ = false;
}

std::string LinePrefixer::Feed(std::string_view chunk) {
  std::string out;
  while (!chunk.empty()) {
    const char c = chunk.front();
    if (c == '\n') {
      if (cut_ && line_.empty()) {
        cut_ = false;
        redraw_ = false;
      } else {
        EmitLine(out);
      }
      chunk.remove_prefix(1);
      continue;
    }
    if (c == '\r') {
      // Not yet a redraw: "\r\n" ends the line as it stands.
      redraw_ = true;
      chunk.remove_prefix(1);
      continue;
    }
    if (redraw_) {
      line_.clear();
      redraw_ = false;
    }
    cut_ = false;
    // The text up to the next line end or redraw, as much as the line has room for.
    const size_t end = std::min(chunk.find_first_of("\r\n"), chunk.size());
    const size_t take = std::min(end, max_line_bytes_ - line_.size());
    line_.append(chunk.data(), take);
    chunk.remove_prefix(take);
    if (line_.size() >= max_line_bytes_) {
      EmitLine(out);
      cut_ = true;
    }
  }
  return out;
}

std::string LinePrefixer::Flush() {
  std::string out;
  if (!line_.empty()) EmitLine(out);
  redraw_ = false;
  cut_ = false;
  return out;
}

}  // namespace rill::cli
