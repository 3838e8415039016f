// LinePrefixer: a task's output, read in arbitrary chunks, as whole lines
// prefixed with the task.
#include "cli/line_prefixer.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rill::cli {
namespace {

using namespace std::string_literals;

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

TEST(LinePrefixer, ColoursAndUtf8AreText) {
  LinePrefixer prefixer("[w] ");
  // A coloured progress bar of block characters, redrawn.
  EXPECT_EQ(prefixer.Feed("\x1b[32m\xe2\x96\x88    \x1b[0m 25%\r"
                          "\x1b[32m\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\x1b[0m 100%\n"),
            "[w] \x1b[32m\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\x1b[0m 100%\n");
  EXPECT_FALSE(prefixer.binary());
}

TEST(LinePrefixer, ANulByteTurnsTheStreamBinaryAndKeepsTheWholeLine) {
  LinePrefixer prefixer("[w] ");
  EXPECT_EQ(prefixer.Feed("10%\r20%\r30%\n"), "[w] 30%\n");
  // The line's first drawing is not given up: its replacement never ended
  // as text.
  EXPECT_EQ(prefixer.Feed("a\rb"), "");
  EXPECT_EQ(prefixer.Feed("\0c\rd\r\n"s), "[w] a\rb\0c\rd\r\n"s);
  EXPECT_TRUE(prefixer.binary());
  // It stays binary: '\r' is a byte like any other from now on.
  EXPECT_EQ(prefixer.Feed("1%\r2%\n"), "[w] 1%\r2%\n");
  EXPECT_EQ(prefixer.Feed("\r"), "");
  EXPECT_EQ(prefixer.Flush(), "[w] \r\n");
}

TEST(LinePrefixer, InvalidUtf8IsBinary) {
  const std::string cases[] = {
      "caf\xe9\rx",       // Latin-1.
      "\xc0\xaf\rx",      // An overlong '/'.
      "\xed\xa0\x80\rx",  // A surrogate.
      "\xe2\x96\rx",      // A sequence cut short.
      "\x80\rx",          // A continuation byte alone.
      "\x7f\rx",          // DEL.
  };
  for (const std::string& text : cases) {
    LinePrefixer prefixer("> ");
    EXPECT_EQ(prefixer.Feed(text + "\n"), "> " + text + "\n") << text;
    EXPECT_TRUE(prefixer.binary()) << text;
  }
}

TEST(LinePrefixer, CutsALongBinaryLineWithoutLosingBytes) {
  LinePrefixer prefixer("> ", /*max_line_bytes=*/4);
  // Three text bytes and a redraw held back, then a NUL: the line holds
  // more than the limit when it turns binary.
  EXPECT_EQ(prefixer.Feed("abc\r"), "");
  EXPECT_EQ(prefixer.Feed("\0defgh\n"s), "> abc\r\n> \0def\n> gh\n"s);
  EXPECT_EQ(prefixer.Feed("wxyz\n"), "> wxyz\n");
}

// The lines that a binary stream must come out as: every byte, each line
// after the prefix, a '\n' added only to a last line without one.
std::string Framed(std::string_view prefix, std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const size_t end = bytes.find('\n');
    out += prefix;
    out += bytes.substr(0, end);
    out += '\n';
    bytes.remove_prefix(end == std::string_view::npos ? bytes.size() : end + 1);
  }
  return out;
}

TEST(LinePrefixer, RandomBytesComeThroughWhole) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 random(seed);
    std::string bytes(256 * 1024, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    // The stream is read in chunks of any size.
    LinePrefixer prefixer("[worker 0] ");
    std::string out;
    for (std::string_view rest = bytes; !rest.empty();) {
      const size_t n = std::min<size_t>(rest.size(), 1 + random() % 8192);
      out += prefixer.Feed(rest.substr(0, n));
      rest.remove_prefix(n);
    }
    out += prefixer.Flush();
    EXPECT_TRUE(prefixer.binary()) << "seed " << seed;
    EXPECT_TRUE(out == Framed("[worker 0] ", bytes)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace rill::cli
