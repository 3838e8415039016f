#include "graph/progress_line.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kErase[] = "\r\x1b[K";

// What a progress line wrote, read back from memory.
class Captured {
 public:
  Captured() : file_(open_memstream(&data_, &size_)) {}
  ~Captured() {
    std::fclose(file_);
    std::free(data_);
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;

  std::FILE* file() { return file_; }
  std::string Read() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* const file_;
};

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A clock the test moves by hand.
class ProgressLineTest : public ::testing::Test {
 protected:
  ProgressLineOptions Options(bool terminal) {
    ProgressLineOptions options;
    options.file = out_.file();
    options.terminal = terminal;
    options.clock = [this] { return now_; };
    return options;
  }

  Captured out_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(ProgressLineTest, PipedPrintsAPlainLineEveryIntervalAndAtFinish) {
  ProgressLine progress("train", 20, Options(/*terminal=*/false));
  for (int step = 1; step <= 12; ++step) {
    now_ += absl::Seconds(1);
    progress.Update(step);
  }
  EXPECT_EQ(out_.Read(),
            "train  5/20 steps  25% | 1.0 steps/s | 15.0 s left\n"
            "train  10/20 steps  50% | 1.0 steps/s | 10.0 s left\n");
  progress.Finish();
  EXPECT_EQ(out_.Read(),
            "train  5/20 steps  25% | 1.0 steps/s | 15.0 s left\n"
            "train  10/20 steps  50% | 1.0 steps/s | 10.0 s left\n"
            "train  12/20 steps  60% | 1.0 steps/s mean | 12.0 s total\n");
  // Nothing after the final line.
  now_ += absl::Seconds(60);
  progress.Update(13);
  progress.Finish();
  EXPECT_EQ(Count(out_.Read(), "\n"), 3);
}

TEST_F(ProgressLineTest, PipedPrintsNothingBeforeTheFirstInterval) {
  ProgressLine progress("run", 200, Options(/*terminal=*/false));
  for (int step = 1; step <= 200; ++step) {
    now_ += absl::Milliseconds(10);
    progress.Update(step);
  }
  EXPECT_EQ(out_.Read(), "");
  progress.Finish();
  EXPECT_EQ(out_.Read(), "run  200/200 steps 100% | 100.0 steps/s mean | 2.0 s total\n");
}

TEST_F(ProgressLineTest, TerminalRedrawsInPlaceAtMostTenTimesASecond) {
  ProgressLine progress("train", 10000, Options(/*terminal=*/true));
  for (int step = 1; step <= 1000; ++step) {
    now_ += absl::Milliseconds(1);
    progress.Update(step);
  }
  const std::string shown = out_.Read();
  EXPECT_THAT(shown, StartsWith(kErase));
  EXPECT_EQ(Count(shown, kErase), 10) << shown;
  EXPECT_THAT(shown, Not(HasSubstr("\n")));
  EXPECT_THAT(shown, EndsWith(std::string(kErase) +
                              "train  1000/10000 steps  10% | 1000.0 steps/s | 9.0 s left"));
  progress.Finish();
  EXPECT_THAT(out_.Read(),
              EndsWith(std::string(kErase) +
                       "train  1000/10000 steps  10% | 1000.0 steps/s mean | 1.0 s total\n"));
  EXPECT_EQ(Count(out_.Read(), "\n"), 1);
}

// The time before the first Update (a first step's warm-up) is left out
// of the rate, not out of the mean at the end.
TEST_F(ProgressLineTest, TheRateCountsFromTheFirstUpdate) {
  ProgressLine progress("train", 100, Options(/*terminal=*/false));
  now_ += absl::Seconds(4);
  progress.Update(1);
  now_ += absl::Milliseconds(500);
  progress.Update(6);
  now_ += absl::Milliseconds(500);
  progress.Update(11);
  progress.Finish();
  EXPECT_EQ(out_.Read(),
            "train  11/100 steps  11% | 10.0 steps/s | 8.9 s left\n"
            "train  11/100 steps  11% | 2.2 steps/s mean | 5.0 s total\n");
}

// Until a rate is known, the line has the count only.
TEST_F(ProgressLineTest, ALineBeforeAnyRateHasTheCountOnly) {
  ProgressLine progress("train", 100, Options(/*terminal=*/false));
  now_ += absl::Seconds(5);
  progress.Update(7);
  EXPECT_EQ(out_.Read(), "train  7/100 steps   7%\n");
}

TEST_F(ProgressLineTest, ClearTakesTheLineOffAndTheNextUpdateDrawsItAgain) {
  ProgressLine progress("train", 100, Options(/*terminal=*/true));
  progress.Update(0);
  now_ += absl::Seconds(1);
  progress.Update(10);
  const std::string drawn = out_.Read();
  progress.Clear();
  EXPECT_EQ(out_.Read(), drawn + kErase);
  progress.Clear();  // Nothing is shown: nothing to take off.
  EXPECT_EQ(out_.Read(), drawn + kErase);
  now_ += absl::Milliseconds(1);
  progress.Update(11);
  EXPECT_THAT(out_.Read(), EndsWith(std::string(kErase) + kErase + "train  11/100 steps  11%" +
                                    " | 10.0 steps/s | 8.9 s left"));
}

// A log line written while the progress line is shown takes it off first
// and appears whole; the next Update draws the progress line below it.
TEST_F(ProgressLineTest, LoggedLinesGoAboveTheProgressLine) {
  ProgressLine progress("train", 100, Options(/*terminal=*/true));
  FileLogSink file(out_.file());
  ProgressLogSink log(&file);
  log.WriteLine("before any progress line");
  log.set_progress(&progress);
  progress.Update(0);
  now_ += absl::Seconds(1);
  progress.Update(10);
  log.WriteLine("global_step/sec: 10");
  now_ += absl::Milliseconds(1);
  progress.Update(11);
  progress.Finish();
  EXPECT_EQ(out_.Read(), std::string("before any progress line\n") + kErase +
                             "train  10/100 steps  10% | 10.0 steps/s | 9.0 s left" + kErase +
                             "global_step/sec: 10\n" + kErase +
                             "train  11/100 steps  11% | 10.0 steps/s | 8.9 s left" + kErase +
                             "train  11/100 steps  11% | 11.0 steps/s mean | 1.0 s total\n");
}

TEST_F(ProgressLineTest, ClearDoesNothingInAPipe) {
  ProgressLine progress("train", 100, Options(/*terminal=*/false));
  now_ += absl::Seconds(5);
  progress.Update(50);
  const std::string printed = out_.Read();
  progress.Clear();
  EXPECT_EQ(out_.Read(), printed);
}

TEST_F(ProgressLineTest, ATerminalLineLeftUnfinishedEndsWithANewline) {
  {
    ProgressLine progress("train", 100, Options(/*terminal=*/true));
    progress.Update(0);
    now_ += absl::Seconds(1);
    progress.Update(3);
  }
  EXPECT_EQ(out_.Read(),
            std::string(kErase) + "train  3/100 steps   3% | 3.0 steps/s | 32.3 s left\n");
}

TEST_F(ProgressLineTest, UnknownTotalShowsTheCountAndTheRateOnly) {
  ProgressLineOptions options = Options(/*terminal=*/false);
  options.unit = "files";
  ProgressLine progress("scan", std::nullopt, options);
  for (int i = 1; i <= 5; ++i) {
    now_ += absl::Seconds(1);
    progress.Update(24 * i);
  }
  progress.Finish();
  EXPECT_EQ(out_.Read(),
            "scan  120 files | 24.0 files/s\n"
            "scan  120 files | 24.0 files/s mean | 5.0 s total\n");
}

TEST_F(ProgressLineTest, TimeLeftReadsAsSecondsMinutesOrHours) {
  ProgressLine progress("train", 100000, Options(/*terminal=*/false));
  progress.Update(0);
  now_ += absl::Seconds(5);
  progress.Update(50);
  EXPECT_EQ(out_.Read(), "train  50/100000 steps   0% | 10.0 steps/s | 2:46:35 left\n");
}

TEST(FormatProgressDuration, SecondsUnderAMinuteThenMinutesThenHours) {
  EXPECT_EQ(FormatProgressDuration(absl::ZeroDuration()), "0.00 s");
  EXPECT_EQ(FormatProgressDuration(absl::Milliseconds(250)), "0.25 s");
  EXPECT_EQ(FormatProgressDuration(absl::Milliseconds(999)), "1.0 s");
  EXPECT_EQ(FormatProgressDuration(absl::Milliseconds(4700)), "4.7 s");
  EXPECT_EQ(FormatProgressDuration(absl::Milliseconds(59940)), "59.9 s");
  EXPECT_EQ(FormatProgressDuration(absl::Milliseconds(59960)), "1:00");
  EXPECT_EQ(FormatProgressDuration(absl::Seconds(125)), "2:05");
  EXPECT_EQ(FormatProgressDuration(absl::Seconds(3599)), "59:59");
  EXPECT_EQ(FormatProgressDuration(absl::Seconds(3600 + 62)), "1:01:02");
  EXPECT_EQ(FormatProgressDuration(absl::Hours(30)), "30:00:00");
  EXPECT_EQ(FormatProgressDuration(-absl::Seconds(3)), "0.00 s");
}

TEST_F(ProgressLineTest, SlowRatesKeepTheirDigits) {
  ProgressLine progress("train", 10, Options(/*terminal=*/false));
  progress.Update(0);
  now_ += absl::Seconds(8);
  progress.Update(2);
  EXPECT_EQ(out_.Read(), "train  2/10 steps  20% | 0.250 steps/s | 32.0 s left\n");
}

// The rate is that of the last few seconds, not the mean since the start.
TEST_F(ProgressLineTest, TheRateFollowsAChangeOfPace) {
  ProgressLineOptions options = Options(/*terminal=*/false);
  options.plain_interval = absl::Seconds(20);
  ProgressLine progress("train", std::nullopt, options);
  int64_t done = 0;
  for (int i = 0; i < 100; ++i) {  // 10 steps/s for 10 s.
    now_ += absl::Milliseconds(100);
    progress.Update(++done);
  }
  for (int i = 0; i < 100; ++i) {  // 100 steps/s for 10 s.
    now_ += absl::Milliseconds(100);
    done += 10;
    progress.Update(done);
  }
  const std::string line = out_.Read();
  ASSERT_THAT(line, StartsWith("train  1100 steps | "));
  const double rate =
      std::strtod(line.c_str() + std::string("train  1100 steps | ").size(), nullptr);
  EXPECT_GT(rate, 90) << line;  // The mean since the start is 55.
  EXPECT_LE(rate, 100) << line;
}

// A count that goes back (a restored checkpoint) neither makes the rate
// negative nor counts the steps again.
TEST_F(ProgressLineTest, ACountThatGoesBackKeepsTheRate) {
  ProgressLineOptions options = Options(/*terminal=*/false);
  options.plain_interval = absl::Seconds(1);
  ProgressLine progress("worker 0", 1000, options);
  for (int i = 1; i <= 10; ++i) {
    now_ += absl::Milliseconds(100);
    progress.Update(i);
  }
  now_ += absl::Milliseconds(100);
  progress.Update(2);
  for (int i = 3; i <= 11; ++i) {
    now_ += absl::Milliseconds(100);
    progress.Update(i);
  }
  const std::vector<std::string> lines = absl::StrSplit(out_.Read(), '\n', absl::SkipEmpty());
  EXPECT_THAT(lines, ElementsAre("worker 0  10/1000 steps   1% | 10.0 steps/s | 1:39 left",
                                 "worker 0  11/1000 steps   1% | 10.0 steps/s | 1:39 left"));
}

// A run resumed at step 500 counts its rate from there.
TEST_F(ProgressLineTest, AResumedRunCountsFromItsStart) {
  ProgressLineOptions options = Options(/*terminal=*/false);
  options.start = 500;
  ProgressLine progress("train", 1000, options);
  for (int i = 1; i <= 5; ++i) {
    now_ += absl::Seconds(1);
    progress.Update(500 + 2 * i);
  }
  progress.Finish();
  EXPECT_EQ(out_.Read(),
            "train  510/1000 steps  51% | 2.0 steps/s | 4:05 left\n"
            "train  510/1000 steps  51% | 2.0 steps/s mean | 5.0 s total\n");
}

TEST_F(ProgressLineTest, ADisabledLinePrintsNothingAndReadsNoClock) {
  int reads = 0;
  ProgressLineOptions options = Options(/*terminal=*/true);
  options.enabled = false;
  options.clock = [&] {
    ++reads;
    return now_;
  };
  {
    ProgressLine progress("train", 100, options);
    for (int step = 1; step <= 100; ++step) {
      now_ += absl::Seconds(1);
      progress.Update(step);
    }
    progress.Clear();
    progress.Finish();
  }
  EXPECT_EQ(out_.Read(), "");
  EXPECT_EQ(reads, 0);
}

}  // namespace
}  // namespace rill
