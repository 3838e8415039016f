// LinePrefixer: cuts a task's output (a byte stream read in arbitrary
// chunks) into whole lines, each prefixed with the task's name, so that the
// lines of several tasks can share one stream without running into each other.
#ifndef RILL_CLI_LINE_PREFIXER_H_
#define RILL_CLI_LINE_PREFIXER_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace rill::cli {

// Lines end at '\n'; every line out is the prefix, the line, then '\n'.
//
// Text and binary. A stream is text until it shows a byte that text does
// not have: NUL or another control character than tab, newline, carriage
// return, backspace, form feed and escape (which colours and cursor moves
// use), DEL, or a byte that is not part of valid UTF-8. From that byte on,
// for the rest of the stream, it is binary.
//
// Text: a '\r' not followed by '\n' is a redraw (a progress line drawn in
// place on a terminal): what follows it replaces what came before it on
// the line, and only the last redraw is kept when the line ends, as a
// terminal would show it. Treating '\r' as a line end instead would turn a
// line redrawn ten times a second into ten lines a second in the job's log.
// "\r\n" ends a line like "\n". A drawing is given up only once the one
// that replaces it is complete (ended by '\r' or '\n'), so that a line in
// which the stream turns binary keeps every byte.
//
// Binary: '\r' is a byte like any other, and every byte comes through,
// unchanged and in order. The prefixer adds only the prefix at the start of
// each line and a '\n' where it ends a line the task did not end (a cut,
// below, or the end of the stream): the bytes out are the bytes in plus
// those. Data that starts binary (random bytes, a compressed file) is
// binary from its first bytes; only a text-looking beginning is read as text.
//
// A line longer than `max_line_bytes` (its last redraw, for text) is cut
// into pieces of that size, each a line of its own, so that a task that
// never writes '\n' cannot make the launcher hold its whole output.
//
// Thread safety: none; one stream, one reader.
class LinePrefixer {
 public:
  static constexpr size_t kDefaultMaxLineBytes = 64 * 1024;

  explicit LinePrefixer(std::string prefix, size_t max_line_bytes = kDefaultMaxLineBytes);

  // Takes the next chunk of the stream; returns the lines it completed,
  // prefixed, each ended with '\n' (empty when it completed none).
  std::string Feed(std::string_view chunk);

  // The unfinished last line, prefixed and ended with '\n', when there is
  // one (at the end of the stream); empty otherwise. The prefixer is then
  // ready for a new line; a binary stream stays binary.
  std::string Flush();

  // Whether the stream has turned binary.
  bool binary() const { return binary_; }

 private:
  // Whether `c`, after the bytes before it, can be text; follows UTF-8
  // sequences across calls.
  bool IsTextByte(unsigned char c);
  void FeedText(char c, std::string& out);
  // Takes binary bytes from the front of `chunk`: up to a line end or a cut.
  void FeedBinary(std::string_view& chunk, std::string& out);
  void TurnBinary();
  // What a text line shows: its last drawing.
  std::string_view Shown() const;
  void Emit(std::string_view line, std::string& out) const;
  void EndLine(std::string_view line, std::string& out);

  // Constant after construction (not const, so that a prefixer can be
  // moved into a container).
  std::string prefix_;
  size_t max_line_bytes_;

  // Binary: the line so far. Text: the line so far, which when `redrawn_`
  // is a drawing, the '\r's after it, and from `drawing_at_` the drawing
  // that replaces it.
  std::string line_;
  bool redrawn_ = false;
  size_t drawing_at_ = 0;
  // Text: '\r's read since the last other byte, not yet in `line_`: a
  // redraw when another byte follows, part of a line end when '\n' does.
  size_t pending_returns_ = 0;
  // The last line out was cut at max_line_bytes_ and nothing followed yet:
  // a '\n' now ends that line rather than an empty one.
  bool cut_ = false;
  bool binary_ = false;
  // A UTF-8 sequence under way: its continuation bytes still due, and the
  // range the next one must be in.
  int utf8_due_ = 0;
  unsigned char utf8_low_ = 0x80;
  unsigned char utf8_high_ = 0xBF;
};

}  // namespace rill::cli

#endif  // RILL_CLI_LINE_PREFIXER_H_
