// The shared flag parser: what every rill program makes of its arguments,
// --help and -h included.
#include "cli/flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill::cli {
namespace {

using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ParsedArgs> Parse(const std::vector<std::string>& args) {
  return ParseArgs(args, {"out", "steps"}, {"json"});
}

TEST(ParseArgs, ReadsPositionalsValuesAndSwitches) {
  ASSERT_OK_AND_ASSIGN(const ParsedArgs parsed,
                       Parse({"model.pb", "--out", "dir", "--steps=3", "--json", "-3", "-"}));
  EXPECT_THAT(parsed.positional, ElementsAre("model.pb", "-3", "-"));
  EXPECT_EQ(parsed.Value("out"), "dir");
  EXPECT_EQ(parsed.Value("steps"), "3");
  EXPECT_TRUE(parsed.Has("json"));
  EXPECT_FALSE(parsed.help);
}

TEST(ParseArgs, HelpAndHAskForHelpWithoutBeingListed) {
  for (const char* flag : {"--help", "-h"}) {
    ASSERT_OK_AND_ASSIGN(const ParsedArgs parsed, Parse({"model.pb", flag}));
    EXPECT_TRUE(parsed.help) << flag;
  }
}

// Whatever else is wrong, a user who asks for help gets it.
TEST(ParseArgs, HelpWinsOverErrorsAnywhere) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus", "--help"},
                                             {"-h", "--bogus"},
                                             {"--json=1", "-h"},
                                             {"--out", "a", "--out", "b", "--help"},
                                             {"--help", "--steps"}}) {
    const absl::StatusOr<ParsedArgs> parsed = Parse(args);
    ASSERT_TRUE(parsed.ok()) << ::testing::PrintToString(args) << ": " << parsed.status();
    EXPECT_TRUE(parsed->help) << ::testing::PrintToString(args);
  }
}

TEST(ParseArgs, AnOptionsValueMayReadHelp) {
  // "--out --help" gives --out the value "--help", as getopt does.
  ASSERT_OK_AND_ASSIGN(const ParsedArgs parsed, Parse({"--out", "--help"}));
  EXPECT_FALSE(parsed.help);
  EXPECT_EQ(parsed.Value("out"), "--help");
}

// As TensorFlow's flags library: '-' and '_' are one letter in a name, and
// the option is known by its listed spelling.
TEST(ParseArgs, DashesAndUnderscoresSpellTheSameOption) {
  ASSERT_OK_AND_ASSIGN(
      const ParsedArgs parsed,
      ParseArgs({"--to-text", "a", "--allow_soft_placement", "--max-tensor-bytes=9"},
                {"to_text", "max_tensor_bytes"}, {"allow-soft-placement"}));
  EXPECT_EQ(parsed.Value("to_text"), "a");
  EXPECT_EQ(parsed.Value("max_tensor_bytes"), "9");
  EXPECT_TRUE(parsed.Has("allow-soft-placement"));
  EXPECT_THAT(ParseArgs({"--to-text", "a", "--to_text", "b"}, {"to_text"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--to_text given twice")));
  EXPECT_THAT(
      ParseArgs({"--to-texts"}, {"to_text"}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown option '--to-texts'")));
}

TEST(ParseArgs, UnknownOptionsAreErrorsNamingThem) {
  EXPECT_THAT(Parse({"--bogus"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown option '--bogus'")));
  EXPECT_THAT(Parse({"--bogus=3"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown option '--bogus'")));
  EXPECT_THAT(Parse({"-x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown option '-x'")));
  EXPECT_THAT(Parse({"--help=yes"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--help takes no value")));
}

TEST(ParseArgs, ReportsTheFirstProblem) {
  EXPECT_THAT(Parse({"--json=1", "--bogus"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--json takes no value")));
  EXPECT_THAT(Parse({"--out", "a", "--out=b"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--out given twice")));
  EXPECT_THAT(Parse({"--steps"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--steps needs a value")));
}

TEST(ParseArgs, TheLastValueWinsWhenAsked) {
  ASSERT_OK_AND_ASSIGN(const ParsedArgs parsed, ParseArgs({"--steps=1", "--steps", "2"}, {"steps"},
                                                          {}, RepeatedOption::kLastWins));
  EXPECT_EQ(parsed.Value("steps"), "2");
}

TEST(ParseOptionsOnly, RejectsAPositionalArgumentNamingIt) {
  EXPECT_THAT(
      ParseOptionsOnly({"--out", "dir", "extra"}, {"out"}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected argument 'extra'")));
  ASSERT_OK_AND_ASSIGN(const ParsedArgs parsed, ParseOptionsOnly({"extra", "-h"}, {}, {}));
  EXPECT_TRUE(parsed.help);
}

}  // namespace
}  // namespace rill::cli
