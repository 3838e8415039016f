// rill keygen: writes a CURVE key pair for a cluster (its members share
// the directory), or for a client of a cluster, authorized there.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "transport/curve.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill keygen DIR                 a cluster's key pair (servers: --curve_keys DIR)\n"
    "       rill keygen DIR --server CLUSTER_DIR\n"
    "                                       a client's pair, authorized in CLUSTER_DIR\n";

}  // namespace

int RunKeygenCommand(const std::vector<std::string>& args) {
  const absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"server"}, {});
  if (parsed.ok() && parsed->help) return PrintHelp(kUsage);
  if (!parsed.ok() || parsed->positional.size() != 1) {
    fmt::print(stderr, "rill keygen: {}\n{}",
               parsed.ok() ? "expected one key directory"
                           : OneLine(std::string(parsed.status().message())),
               kUsage);
    return 2;
  }
  const std::string& dir = parsed->positional[0];
  const std::string server = parsed->Value("server").value_or("");
  const absl::StatusOr<std::string> public_key = WriteCurveKeys(dir, server);
  if (!public_key.ok()) {
    fmt::print(stderr, "rill keygen: {}\n", OneLine(std::string(public_key.status().message())));
    return 1;
  }
  fmt::print("{}: public key {}\n", dir, *public_key);
  if (server.empty()) {
    fmt::print("every task of the cluster: rill server ... --curve_keys {}\n", dir);
  } else {
    fmt::print("authorized in {}/authorized_keys; servers read it when they start\n", server);
  }
  return 0;
}

}  // namespace rill::cli
