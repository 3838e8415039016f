// A small command-line parser for rill's programs (the subcommands and the
// examples): positional arguments and --name=value / --name value / --flag
// options, with errors for unknown or repeated options instead of silent
// defaults, and --help / -h known to every program.
#ifndef RILL_CLI_FLAGS_H_
#define RILL_CLI_FLAGS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill::cli {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // Options that take a value.
  std::set<std::string> switches;             // Options without a value.
  // --help or -h was given: the program prints its usage and does nothing
  // else, whatever the other arguments are.
  bool help = false;

  std::optional<std::string> Value(const std::string& name) const;
  bool Has(const std::string& name) const { return switches.count(name) > 0; }
};

// What ParseArgs makes of an option given twice: an error, or the last
// value, as TensorFlow's flags do for the scripts that append flags to a
// shared list.
enum class RepeatedOption { kError, kLastWins };

// `value_options` take a value; `switch_options` do not. Names are given
// without the leading "--". --help and -h need not be listed: they set
// `help`, and then nothing else in `args` is an error. An argument that
// starts with '-' is an option unless it is a number ("-3") or "-" alone.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::set<std::string>& value_options,
                                     const std::set<std::string>& switch_options,
                                     RepeatedOption repeated = RepeatedOption::kError);

// ParseArgs for a program that takes options only: an argument that is
// not one is an error naming it.
absl::StatusOr<ParsedArgs> ParseOptionsOnly(const std::vector<std::string>& args,
                                            const std::set<std::string>& value_options,
                                            const std::set<std::string>& switch_options,
                                            RepeatedOption repeated = RepeatedOption::kError);

// Prints `usage` on stdout, as --help asks; returns the exit code, 0.
int PrintHelp(std::string_view usage);

// Prints "PROGRAM: REASON" on one line and then `usage` on stderr, for
// arguments the program cannot run with; returns the exit code, 2.
int PrintUsageError(std::string_view program, const absl::Status& error, std::string_view usage);

// The value of --max_tensor_bytes, when given: the most bytes one tensor
// may take in this process (SetMaxTensorBytes). Errors name the flag.
absl::StatusOr<std::optional<size_t>> ParseMaxTensorBytesFlag(const ParsedArgs& parsed);

// Status messages may span lines; a command's error is one line.
std::string OneLine(std::string_view message);

}  // namespace rill::cli

#endif  // RILL_CLI_FLAGS_H_
