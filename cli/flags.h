// A small command-line parser for the rill subcommands: positional
// arguments and --name=value / --name value / --flag options, with
// errors for unknown or repeated options instead of silent defaults.
#ifndef RILL_CLI_FLAGS_H_
#define RILL_CLI_FLAGS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rill::cli {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // Options that take a value.
  std::set<std::string> switches;             // Options without a value.

  std::optional<std::string> Value(const std::string& name) const;
  bool Has(const std::string& name) const { return switches.count(name) > 0; }
};

// `value_options` take a value; `switch_options` do not. Names are given
// without the leading "--".
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::set<std::string>& value_options,
                                     const std::set<std::string>& switch_options);

// The value of --device_count (runtime's ParseDeviceCount), with errors
// that name the flag and the value.
absl::StatusOr<std::map<std::string, int>> ParseDeviceCountFlag(const std::string& value);

// The value of --max_tensor_bytes, when given: the most bytes one tensor
// may take in this process (SetMaxTensorBytes). Errors name the flag.
absl::StatusOr<std::optional<size_t>> ParseMaxTensorBytesFlag(const ParsedArgs& parsed);

// Status messages may span lines; a command's error is one line.
std::string OneLine(std::string_view message);

}  // namespace rill::cli

#endif  // RILL_CLI_FLAGS_H_
