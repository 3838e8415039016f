#include "graph/progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/time/clock.h"
#include "fmt/core.h"

namespace rill {
namespace {

// The rate is sampled at most this often: counts over shorter spans are
// mostly the noise of single steps.
constexpr absl::Duration kSamplePeriod = absl::Milliseconds(100);
// The moving average's time constant: a sample's weight halves in about
// two seconds, recent enough to follow a change of pace, smooth enough to read.
constexpr double kRateSeconds = 3.0;

// Erases a terminal's line and goes back to its start.
constexpr char kEraseLine[] = "\r\x1b[K";

std::string FormatRate(double rate) {
  // Slow counts (a step every few seconds) keep their digits.
  return rate >= 1 ? fmt::format("{:.1f}", rate) : fmt::format("{:.3f}", rate);
}

}  // namespace

std::string FormatProgressDuration(absl::Duration duration) {
  const double seconds = std::max(0.0, absl::ToDoubleSeconds(duration));
  // The thresholds are on the rounded values, so that 59.96 s is "1:00", not "60.0 s".
  if (std::round(seconds * 100) < 100) return fmt::format("{:.2f} s", seconds);
  if (std::round(seconds * 10) < 600) return fmt::format("{:.1f} s", seconds);
  const int64_t whole = std::llround(seconds);
  if (whole < 3600) return fmt::format("{}:{:02}", whole / 60, whole % 60);
  return fmt::format("{}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
}

ProgressLine::ProgressLine(std::string label, std::optional<int64_t> total,
                           ProgressLineOptions options)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(options.unit)),
      file_(options.file),
      terminal_(options.terminal.value_or(file_ != nullptr && isatty(fileno(file_)) != 0)),
      clock_(options.clock ? std::move(options.clock) : std::function<absl::Time()>(absl::Now)),
      draw_interval_(terminal_ ? options.redraw_interval : options.plain_interval),
      start_count_(options.start),
      enabled_(options.enabled && file_ != nullptr),
      done_(options.start),
      sample_done_(options.start) {
  if (!enabled_) return;
  start_time_ = clock_();
  next_draw_ = start_time_ + draw_interval_;
  // The first Update starts the rate's measurement.
  next_sample_ = absl::InfinitePast();
  next_due_ = next_sample_;
}

ProgressLine::~ProgressLine() {
  if (showing_) {
    std::fputc('\n', file_);
    std::fflush(file_);
  }
}

void ProgressLine::Due(absl::Time now) {
  if (now >= next_sample_) Sample(now);
  if (now >= next_draw_) {
    std::string line = label_ + "  " + CountText();
    if (rate_ >= 0) {
      line += fmt::format(" | {} {}/s", FormatRate(rate_), unit_);
      if (total_.has_value() && rate_ > 0) {
        const double left = static_cast<double>(std::max<int64_t>(0, *total_ - done_)) / rate_;
        line += " | " + FormatProgressDuration(absl::Seconds(left)) + " left";
      }
    }
    Write(line, /*last=*/false);
    next_draw_ = now + draw_interval_;
  }
  next_due_ = std::min(next_sample_, next_draw_);
}

void ProgressLine::Sample(absl::Time now) {
  const double seconds = absl::ToDoubleSeconds(now - sample_time_);
  // The rate counts from the first Update, not from the start: the time
  // before it (building a graph, a first step's warm-up) says little about
  // the steps to come. A count that went back (a restored checkpoint)
  // restarts the measurement from there and leaves the rate as it was.
  if (sample_time_ != absl::InfinitePast() && done_ >= sample_done_ && seconds > 0) {
    const double rate = static_cast<double>(done_ - sample_done_) / seconds;
    // The weight of a span grows with its length, so that the average is
    // the same whether Update is called every millisecond or every minute.
    const double weight = 1 - std::exp(-seconds / kRateSeconds);
    rate_ = rate_ < 0 ? rate : rate_ + weight * (rate - rate_);
  }
  sample_time_ = now;
  sample_done_ = done_;
  next_sample_ = now + kSamplePeriod;
}

std::string ProgressLine::CountText() const {
  if (!total_.has_value()) return fmt::format("{} {}", done_, unit_);
  const double fraction =
      *total_ > 0 ? static_cast<double>(done_) / static_cast<double>(*total_) : 1.0;
  // Rounded down: 100% only when done.
  const int percent = static_cast<int>(std::clamp(std::floor(fraction * 100), 0.0, 100.0));
  return fmt::format("{}/{} {} {:>3}%", done_, *total_, unit_, percent);
}

void ProgressLine::Finish() {
  if (!enabled_) return;
  enabled_ = false;
  const absl::Duration elapsed = clock_() - start_time_;
  std::string line = label_ + "  " + CountText();
  if (elapsed > absl::ZeroDuration()) {
    const double mean = static_cast<double>(done_ - start_count_) / absl::ToDoubleSeconds(elapsed);
    line += fmt::format(" | {} {}/s mean", FormatRate(std::max(0.0, mean)), unit_);
  }
  line += " | " + FormatProgressDuration(elapsed) + " total";
  Write(line, /*last=*/true);
}

void ProgressLine::Clear() {
  if (!showing_) return;
  std::fputs(kEraseLine, file_);
  std::fflush(file_);
  showing_ = false;
  next_draw_ = absl::InfinitePast();
  next_due_ = next_draw_;
}

void ProgressLogSink::WriteLine(std::string_view line) {
  if (progress_ != nullptr) progress_->Clear();
  out_->WriteLine(line);
}

void ProgressLine::Write(const std::string& line, bool last) {
  // One write per line, so that it reaches the terminal whole.
  std::string out = terminal_ ? kEraseLine + line : line;
  if (!terminal_ || last) out += '\n';
  std::fwrite(out.data(), 1, out.size(), file_);
  std::fflush(file_);
  showing_ = terminal_ && !last;
}

}  // namespace rill
