// LinePrefixer: cuts a task's output (a byte stream read in arbitrary
// chunks) into whole lines, each prefixed with the task's name, so that the
// lines of several tasks can share one stream without running into each other.
#ifndef RILL_CLI_LINE_PREFIXER_H_
#define RILL_CLI_LINE_PREFIXER_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace rill::cli {

// Lines end at '\n'. A '\r' not followed by '\n' is a redraw (a progress
// line drawn in place on a terminal): what follows it replaces what came
// before it on the line, and only the last redraw is kept when the line
// ends, as a terminal would show it. Treating '\r' as a line end instead
// would turn a line redrawn ten times a second into ten lines a second in
// the job's log. "\r\n" ends a line like "\n". A line longer than
// `max_line_bytes` is cut into pieces of that size, each a line of its own,
// so that a task that never writes '\n' cannot make the launcher hold its
// whole output.
//
// Thread safety: none; one stream, one reader.
class LinePrefixer {
 public:
  static constexpr size_t kDefaultMaxLineBytes = 64 * 1024;

  // Every line out is `prefix` then the line then '\n'.
  explicit LinePrefixer(std::string prefix, size_t max_line_bytes = kDefaultMaxLineBytes);

  // Takes the next chunk of the stream; returns the lines it completed,
  // prefixed, each ended with '\n' (empty when it completed none).
  std::string Feed(std::string_view chunk);

  // The unfinished last line, prefixed and ended with '\n', when there is
  // one (at the end of the stream); empty otherwise. The prefixer is then
  // ready for a new line.
  std::string Flush();

 private:
  void EmitLine(std::string& out);

  // Constant after construction (not const, so that a prefixer can be
  // moved into a container).
  std::string prefix_;
  size_t max_line_bytes_;

  std::string line_;     // The line so far, without its prefix.
  bool redraw_ = false;  // A '\r' was read: the next other byte starts the line over.
  // The last line out was cut at max_line_bytes_ and nothing followed yet:
  // a '\n' now ends that line rather than an empty one.
  bool cut_ = false;
};

}  // namespace rill::cli

#endif  // RILL_CLI_LINE_PREFIXER_H_
