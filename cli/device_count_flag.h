// --device_count for the commands that make devices (rill run, rill
// server): runtime parses the value, this names the flag in its errors.
#ifndef RILL_CLI_DEVICE_COUNT_FLAG_H_
#define RILL_CLI_DEVICE_COUNT_FLAG_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace rill::cli {

// The value of --device_count (runtime's ParseDeviceCount), with errors
// that name the flag and the value.
absl::StatusOr<std::map<std::string, int>> ParseDeviceCountFlag(const std::string& value);

}  // namespace rill::cli

#endif  // RILL_CLI_DEVICE_COUNT_FLAG_H_
