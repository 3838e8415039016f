// ProgressLine: how far a long command is (count, percent, rate, time left) on one line,
// redrawn in place on a terminal and printed as a plain line every few seconds into a pipe.
#ifndef RILL_GRAPH_PROGRESS_LINE_H_
#define RILL_GRAPH_PROGRESS_LINE_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "graph/log_sink.h"

namespace rill {

struct ProgressLineOptions {
  // What is counted, plural: "steps", "events", "files".
  std::string unit = "steps";
  // Where the line goes. A stdio stream rather than a LogSink: redrawing in
  // place writes a line without its newline.
  std::FILE* file = stderr;
  // Whether `file` is a terminal; unset: isatty(fileno(file)).
  std::optional<bool> terminal = std::nullopt;
  // false: nothing is printed and the clock is never read (--quiet).
  bool enabled = true;
  // Empty: absl::Now.
  std::function<absl::Time()> clock = nullptr;
  // On a terminal, the least time between two redraws: more than about ten
  // a second cannot be read and only costs writes.
  absl::Duration redraw_interval = absl::Milliseconds(100);
  // Into a pipe or a file, the time between two plain lines: often enough
  // to see a run move, seldom enough not to fill its log.
  absl::Duration plain_interval = absl::Seconds(5);
  // The count when the line starts (a run resumed from a checkpoint):
  // Finish's mean rate counts from it.
  int64_t start = 0;
};

// A line reads
//   train  1200/5000 steps  24% | 812.3 steps/s | 4.7 s left
// with the rate of the last few seconds (a moving average, so that it
// follows a run that speeds up or slows down; measured from the first
// Update, so that a first step's warm-up does not count), or without a total
//   scan  1200 files | 812.3 files/s
// and Finish's line has the mean rate and the total time instead:
//   train  5000/5000 steps 100% | 806.4 steps/s mean | 6.2 s total
// Nothing is drawn before the first interval has passed, so a command
// that ends sooner prints only Finish's line.
//
// Thread safety: none; one thread (a training loop's) updates a line.
class ProgressLine {
 public:
  // `total`: the count when the command is done; nullopt when not known.
  ProgressLine(std::string label, std::optional<int64_t> total, ProgressLineOptions options = {});
  // A terminal's line that Finish did not end is ended with a newline, so
  // that what follows (an error) starts a line of its own.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The count is now `done` (it may go back: a restored checkpoint). Called
  // every step: costs a clock read and a comparison unless the rate is due
  // a sample (every 100 ms) or the line a redraw; only a redraw formats.
  void Update(int64_t done) {
    done_ = done;
    if (!enabled_) return;
    const absl::Time now = clock_();
    if (now >= next_due_) Due(now);
  }

  // Prints the final line (on a terminal, in place of the running one and
  // ending it). Nothing is printed after it.
  void Finish();

  // Takes a terminal's line off the screen so that other output can be
  // written on the same terminal; the next Update draws it again at once.
  // Does nothing into a pipe, where every line is whole.
  void Clear();

 private:
  void Due(absl::Time now);
  void Sample(absl::Time now);
  std::string CountText() const;
  // Writes `line`: on a terminal over the one shown, ended with a newline
  // when `last`; elsewhere on a line of its own.
  void Write(const std::string& line, bool last);

  // Constant after construction.
  const std::string label_;
  const std::optional<int64_t> total_;
  const std::string unit_;
  std::FILE* const file_;
  const bool terminal_;
  const std::function<absl::Time()> clock_;
  const absl::Duration draw_interval_;
  const int64_t start_count_;
  absl::Time start_time_;

  bool enabled_;  // Until Finish.
  int64_t done_;
  // The rate: a moving average of the counts between samples; < 0 before
  // the first sample.
  double rate_ = -1;
  absl::Time sample_time_ = absl::InfinitePast();  // None before the first Update.
  int64_t sample_done_;
  absl::Time next_sample_;
  absl::Time next_draw_;
  absl::Time next_due_;   // The sooner of the two: Update's one comparison.
  bool showing_ = false;  // A terminal's line is on screen, without its newline.
};

// Lines logged while a progress line may be on the same terminal (a
// training loop's hooks, a session's recoveries): each takes the progress
// line off first, so that the two do not run into each other, and the
// next Update draws it again below.
// Thread safety: unlike other sinks, written only from the thread that
// updates the progress line.
class ProgressLogSink final : public LogSink {
 public:
  // Lines go on to `out`; null: stderr.
  explicit ProgressLogSink(LogSink* out = nullptr) : out_(OrDefault(out)) {}

  // The line to take off; null: none (yet).
  void set_progress(ProgressLine* progress) { progress_ = progress; }

  void WriteLine(std::string_view line) override;

 private:
  LogSink* const out_;
  ProgressLine* progress_ = nullptr;
};

// A duration as a progress line prints it: "0.25 s", "4.7 s", "2:05" (m:ss),
// "1:01:02" (h:mm:ss).
std::string FormatProgressDuration(absl::Duration duration);

}  // namespace rill

#endif  // RILL_GRAPH_PROGRESS_LINE_H_
