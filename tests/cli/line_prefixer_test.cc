// LinePrefixer: a task's output, read in arbitrary chunks, as whole lines
// prefixed with the task.
#include "cli/line_prefixer.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rill::cli {
namespace {

TEST(LinePrefixer, PrefixesEveryWholeLine) {
  LinePrefixer prefixer("[worker 1] ");
  EXPECT_EQ(prefixer.Feed("step 1\nstep 2\n"), "[worker 1] step 1\n[worker 1] step 2\n");
  EXPECT_EQ(prefixer.Flush(), "");
}

TEST(LinePrefixer, JoinsALineSplitAcrossChunks) {
  LinePrefixer prefixer("[ps 0] ");
  EXPECT_EQ(prefixer.Feed("serv"), "");
  EXPECT_EQ(prefixer.Feed("ing at "), "");
  EXPECT_EQ(prefixer.Feed("127.0.0.1:2222\nnext"), "[ps 0] serving at 127.0.0.1:2222\n");
  EXPECT_EQ(prefixer.Feed(" line\n"), "[ps 0] next line\n");
}

TEST(LinePrefixer, OneByteAtATimeGivesTheSameLines) {
  const std::string text = "a\n\nbc\r\nprogress 1\rprogress 2\ndone";
  LinePrefixer whole("> ");
  std::string expected = whole.Feed(text);
  expected += whole.Flush();
  LinePrefixer bytes("> ");
  std::string out;
  for (const char c : text) out += bytes.Feed(std::string(1, c));
  out += bytes.Flush();
  EXPECT_EQ(out, expected);
  EXPECT_EQ(out, "> a\n> \n> bc\n> progress 2\n> done\n");
}

TEST(LinePrefixer, FlushEndsAPartialLastLine) {
  LinePrefixer prefixer("[worker 0] ");
  EXPECT_EQ(prefixer.Feed("line\nno newline at the end"), "[worker 0] line\n");
  EXPECT_EQ(prefixer.Flush(), "[worker 0] no newline at the end\n");
  // Nothing is left after it, and a new line starts clean.
  EXPECT_EQ(prefixer.Flush(), "");
  EXPECT_EQ(prefixer.Feed("again\n"), "[worker 0] again\n");
}

TEST(LinePrefixer, KeepsEmptyLines) {
  LinePrefixer prefixer("[w] ");
  EXPECT_EQ(prefixer.Feed("\n\nx\n\n"), "[w] \n[w] \n[w] x\n[w] \n");
}

TEST(LinePrefixer, KeepsOnlyTheLastRedrawOfALine) {
  LinePrefixer prefixer("[worker 0] ");
  // A progress line redrawn in place, then ended.
  EXPECT_EQ(prefixer.Feed("train  10/100\rtrain  20/100\r"), "");
  EXPECT_EQ(prefixer.Feed("train 100/100\n"), "[worker 0] train 100/100\n");
  // A redraw cleared with \r, then a line written over it.
  EXPECT_EQ(prefixer.Feed("train 5/9\r         \rWorker 0: loss 0.5\n"),
            "[worker 0] Worker 0: loss 0.5\n");
  // A line left on its last redraw is flushed as that redraw.
  EXPECT_EQ(prefixer.Feed("train 1/9\rtrain 2/9\r"), "");
  EXPECT_EQ(prefixer.Flush(), "[worker 0] train 2/9\n");
}

TEST(LinePrefixer, CarriageReturnNewlineEndsOneLine) {
  LinePrefixer prefixer("[ps 0] ");
  EXPECT_EQ(prefixer.Feed("dos line\r\nnext\r"), "[ps 0] dos line\n");
  EXPECT_EQ(prefixer.Feed("\n"), "[ps 0] next\n");
  EXPECT_EQ(prefixer.Feed("\r\n"), "[ps 0] \n");
}

TEST(LinePrefixer, CutsAVeryLongLineIntoPieces) {
  LinePrefixer prefixer("> ", /*max_line_bytes=*/4);
  EXPECT_EQ(prefixer.Feed("abcdefghij"), "> abcd\n> efgh\n");
  EXPECT_EQ(prefixer.Feed("\n"), "> ij\n");
  // A line of exactly the limit ends with its own newline, not an extra empty line.
  EXPECT_EQ(prefixer.Feed("wxyz"), "> wxyz\n");
  EXPECT_EQ(prefixer.Feed("\n"), "");
  EXPECT_EQ(prefixer.Feed("\n"), "> \n");
}

TEST(LinePrefixer, HoldsNoMoreThanTheLimitOfALineWithoutNewlines) {
  LinePrefixer prefixer("> ");
  const std::string chunk(1000, 'x');
  size_t lines = 0;
  std::string out;
  for (int i = 0; i < 200; ++i) out += prefixer.Feed(chunk);
  for (const char c : out) lines += c == '\n';
  // 200,000 bytes in 64 KiB pieces: three whole ones so far.
  EXPECT_EQ(lines, 200000 / LinePrefixer::kDefaultMaxLineBytes);
  EXPECT_EQ(prefixer.Flush().size(), 2 + 200000 % LinePrefixer::kDefaultMaxLineBytes + 1);
}

}  // namespace
}  // namespace rill::cli
