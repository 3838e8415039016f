#include "cli/flags.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "runtime/device_factory.h"

namespace rill::cli {

std::optional<std::string> ParsedArgs::Value(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string> &args,
                                     const std::set<std::string> &value_options,
                                     const std::set<std::string> &switch_options) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (!arg.starts_with("--") || arg == "--") {
      parsed.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (switch_options.count(name)) {
      if (value) return absl::InvalidArgumentError(absl::StrFormat("--%s takes no value", name));
      parsed.switches.insert(name);
      continue;
    }
    if (!value_options.count(name)) {
      return absl::InvalidArgumentError(absl::StrFormat("unknown option '--%s'", name));
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrFormat("--%s needs a value", name));
      }
      value = args[++i];
    }
    if (!parsed.values.emplace(name, *value).second) {
      return absl::InvalidArgumentError(absl::StrFormat("--%s given twice", name));
    }
  }
  return parsed;
}

std::string OneLine(std::string_view message) {
  std::string out(message);
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::replace(out.begin(), out.end(), '\r', ' ');
  return out;
}

absl::StatusOr<std::map<std::string, int>> ParseDeviceCountFlag(const std::string &value) {
  absl::StatusOr<std::map<std::string, int>> device_count = ParseDeviceCount(value);
  if (!device_count.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--device_count '%s': %s", value, device_count.status().message()));
  }
  return device_count;
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
