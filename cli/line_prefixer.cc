#include "cli/line_prefixer.h"

#include <algorithm>
#include <utility>

namespace rill::cli {

LinePrefixer::LinePrefixer(std::string prefix, size_t max_line_bytes)
    : prefix_(std::move(prefix)), max_line_bytes_(std::max<size_t>(max_line_bytes, 1)) {}

bool LinePrefixer::IsTextByte(unsigned char c) {
  if (utf8_due_ > 0) {
    if (c < utf8_low_ || c > utf8_high_) return false;
    --utf8_due_;
    utf8_low_ = 0x80;
    utf8_high_ = 0xBF;
    return true;
  }
  if (c < 0x20) {
    return c == '\t' || c == '\n' || c == '\r' || c == '\b' || c == '\f' || c == 0x1B;
  }
  if (c < 0x7F) return true;
  // The first byte of a sequence, and the range of the next one where it
  // is narrower than 80..BF: no overlong forms, surrogates, or code points
  // above U+10FFFF.
  if (c >= 0xC2 && c <= 0xDF) {
    utf8_due_ = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    utf8_due_ = 2;
    if (c == 0xE0) utf8_low_ = 0xA0;
    if (c == 0xED) utf8_high_ = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    utf8_due_ = 3;
    if (c == 0xF0) utf8_low_ = 0x90;
    if (c == 0xF4) utf8_high_ = 0x8F;
  } else {
    return false;  // DEL, a continuation byte out of place, or no UTF-8 at all.
  }
  return true;
}

std::string_view LinePrefixer::Shown() const {
  std::string_view line = line_;
  return redrawn_ ? line.substr(drawing_at_) : line;
}

void LinePrefixer::Emit(std::string_view line, std::string& out) const {
  out += prefix_;
  out += line;
  out += '\n';
}

void LinePrefixer::EndLine(std::string_view line, std::string& out) {
  // A '\n' right after a cut ends the piece already out.
  if (!(cut_ && line.empty())) Emit(line, out);
  line_.clear();
  redrawn_ = false;
  pending_returns_ = 0;
  cut_ = false;
}

// What the text rules held back goes into the line as it was read, so that
// nothing of it is lost.
void LinePrefixer::TurnBinary() {
  binary_ = true;
  line_.append(pending_returns_, '\r');
  pending_returns_ = 0;
  redrawn_ = false;
}

void LinePrefixer::FeedText(char c, std::string& out) {
  if (c == '\n') {
    EndLine(Shown(), out);
    return;
  }
  if (c == '\r') {
    // The drawing after the last redraw is complete: the one it replaces
    // is given up.
    if (redrawn_) {
      line_.erase(0, drawing_at_);
      redrawn_ = false;
    }
    // A run of them draws the same as one; a bound keeps an endless run
    // from growing the line.
    pending_returns_ = std::min(pending_returns_ + 1, max_line_bytes_);
    return;
  }
  cut_ = false;
  if (pending_returns_ > 0) {
    line_.append(pending_returns_, '\r');
    pending_returns_ = 0;
    redrawn_ = true;
    drawing_at_ = line_.size();
  }
  line_ += c;
  // A drawing that outgrows the limit is complete enough to replace the
  // one before it.
  if (redrawn_ && line_.size() > max_line_bytes_) {
    line_.erase(0, drawing_at_);
    redrawn_ = false;
  }
  if (!redrawn_ && line_.size() >= max_line_bytes_) {
    Emit(line_, out);
    line_.clear();
    cut_ = true;
  }
}

void LinePrefixer::FeedBinary(std::string_view& chunk, std::string& out) {
  if (chunk.front() == '\n') {
    EndLine(line_, out);
    chunk.remove_prefix(1);
    return;
  }
  cut_ = false;
  const size_t end = std::min(chunk.find('\n'), chunk.size());
  const size_t take = std::min(end, max_line_bytes_ - std::min(line_.size(), max_line_bytes_));
  line_.append(chunk.data(), take);
  chunk.remove_prefix(take);
  // A line that turned binary may already hold more than the limit.
  while (line_.size() >= max_line_bytes_) {
    Emit(std::string_view(line_).substr(0, max_line_bytes_), out);
    line_.erase(0, max_line_bytes_);
    cut_ = true;
  }
}

std::string LinePrefixer::Feed(std::string_view chunk) {
  std::string out;
  while (!chunk.empty()) {
    if (!binary_ && utf8_due_ == 0 && pending_returns_ == 0) {
      // A run of printable ASCII, short of anything the line's limit
      // would do (the byte that reaches it goes one at a time, below).
      const size_t room = max_line_bytes_ - std::min(line_.size() + 1, max_line_bytes_);
      size_t run = 0;
      while (run < chunk.size() && run < room) {
        const unsigned char c = static_cast<unsigned char>(chunk[run]);
        if ((c < 0x20 && c != '\t') || c >= 0x7F) break;
        ++run;
      }
      if (run > 0) {
        cut_ = false;
        line_.append(chunk.data(), run);
        chunk.remove_prefix(run);
        continue;
      }
    }
    if (!binary_) {
      const unsigned char c = static_cast<unsigned char>(chunk.front());
      if (IsTextByte(c)) {
        FeedText(chunk.front(), out);
        chunk.remove_prefix(1);
        continue;
      }
      TurnBinary();
    }
    FeedBinary(chunk, out);
  }
  return out;
}

std::string LinePrefixer::Flush() {
  std::string out;
  if (!line_.empty()) Emit(binary_ ? std::string_view(line_) : Shown(), out);
  line_.clear();
  redrawn_ = false;
  pending_returns_ = 0;
  cut_ = false;
  return out;
}

}  // namespace rill::cli
