#include "cli/flags.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace rill::cli {

std::optional<std::string> ParsedArgs::Value(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

namespace {

// "-3" and "-" are values, not options, so that a negative number can be an
// argument and "-" can name stdin.
bool IsOption(const std::string &arg) {
  return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) &&
         arg[1] != '.';
}

// The listed spelling of option `name`, where '-' and '_' are one letter
// ("--allow-soft-placement" is "--allow_soft_placement"), as TensorFlow's
// flags library reads them; `name` itself when none is listed.
std::string ListedName(const std::string &name, const std::set<std::string> &value_options,
                       const std::set<std::string> &switch_options) {
  if (value_options.count(name) || switch_options.count(name)) return name;
  const auto key = [](std::string text) {
    std::replace(text.begin(), text.end(), '-', '_');
    return text;
  };
  const std::string wanted = key(name);
  for (const std::set<std::string> *options : {&value_options, &switch_options}) {
    for (const std::string &option : *options) {
      if (key(option) == wanted) return option;
    }
  }
  return name;
}

}  // namespace

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string> &args,
                                     const std::set<std::string> &value_options,
                                     const std::set<std::string> &switch_options,
                                     RepeatedOption repeated) {
  ParsedArgs parsed;
  // The first problem; the scan goes on after it, since a --help further on
  // means that it is not reported.
  absl::Status error;
  const auto fail = [&error](std::string message) {
    if (error.ok()) error = absl::InvalidArgumentError(std::move(message));
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    if (!IsOption(arg) || arg == "--") {
      parsed.positional.push_back(arg);
      continue;
    }
    if (!arg.starts_with("--")) {
      fail(absl::StrFormat("unknown option '%s'", arg.substr(0, arg.find('='))));
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    name = ListedName(name, value_options, switch_options);
    // "--help=..." is the one form of --help that reaches here.
    if (switch_options.count(name) || name == "help") {
      if (value) {
        fail(absl::StrFormat("--%s takes no value", name));
        continue;
      }
      parsed.switches.insert(name);
      continue;
    }
    if (!value_options.count(name)) {
      fail(absl::StrFormat("unknown option '--%s'", name));
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        fail(absl::StrFormat("--%s needs a value", name));
        continue;
      }
      value = args[++i];
    }
    if (repeated == RepeatedOption::kLastWins) {
      parsed.values[name] = *value;
    } else if (!parsed.values.emplace(name, *value).second) {
      fail(absl::StrFormat("--%s given twice", name));
    }
  }
  if (parsed.help) return parsed;
  if (!error.ok()) return error;
  return parsed;
}

absl::StatusOr<ParsedArgs> ParseOptionsOnly(const std::vector<std::string> &args,
                                            const std::set<std::string> &value_options,
                                            const std::set<std::string> &switch_options,
                                            RepeatedOption repeated) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, value_options, switch_options, repeated);
  if (parsed.ok() && !parsed->help && !parsed->positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unexpected argument '%s'", parsed->positional[0]));
  }
  return parsed;
}

int PrintHelp(std::string_view usage) {
  std::fwrite(usage.data(), 1, usage.size(), stdout);
  return 0;
}

int PrintUsageError(std::string_view program, const absl::Status &error, std::string_view usage) {
  const std::string line =
      absl::StrFormat("%s: %s\n", program, OneLine(std::string(error.message())));
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fwrite(usage.data(), 1, usage.size(), stderr);
  return 2;
}

std::string OneLine(std::string_view message) {
  std::string out(message);
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::replace(out.begin(), out.end(), '\r', ' ');
  return out;
}

absl::StatusOr<std::optional<size_t>> ParseMaxTensorBytesFlag(const ParsedArgs &parsed) {
  const std::optional<std::string> text = parsed.Value("max_tensor_bytes");
  if (!text) return std::nullopt;
  uint64_t bytes = 0;
  if (!absl::SimpleAtoi(*text, &bytes) || bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--max_tensor_bytes must be a positive number of bytes, got '%s'", *text));
  }
  return std::optional<size_t>(bytes);
}

}  // namespace rill::cli
