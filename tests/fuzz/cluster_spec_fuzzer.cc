// Cluster specs as servers and `rill place` read them. The first line says
// which form the rest is in: "spec" for "ps=H:P,H:P;worker=H:P", "flags"
// for the seed scripts' flags, one "name=value" per line. Invariant: an
// accepted cluster prints as text that parses to the same cluster.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "runtime/distributed/cluster_spec.h"
#include "tests/fuzz/fuzz_util.h"

namespace rill::fuzz {
namespace {

void CheckRoundTrip(const ClusterSpec& cluster) {
  const std::string text = cluster.ToString();
  absl::StatusOr<ClusterSpec> again = ClusterSpec::Parse(text);
  Check(again.ok(), "a cluster's text does not parse");
  Check(again->ToString() == text, "a cluster changed in a round trip");
  Check(again->TaskNames() == cluster.TaskNames(), "a cluster's tasks changed in a round trip");
  for (const std::string& job : cluster.jobs()) {
    for (int task : cluster.TaskIndices(job)) {
      Check(cluster.TaskAddress(job, task).ok(), "a listed task has no address");
    }
  }
}

}  // namespace
}  // namespace rill::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  const std::string_view input = fuzz::AsView(data, size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view form = input.substr(0, newline);
  const std::string_view rest = input.substr(newline + 1);
  if (form == "spec") {
    absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Parse(rest);
    if (cluster.ok()) fuzz::CheckRoundTrip(*cluster);
  } else if (form == "flags") {
    std::map<std::string, std::string> flags;
    for (std::string_view line : fuzz::Split(rest, "\n")) {
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      flags[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
    absl::StatusOr<ServerConfig> config = ServerConfigFromFlags(flags);
    if (config.ok()) {
      fuzz::CheckRoundTrip(config->cluster);
      fuzz::Check(config->cluster.TaskAddress(config->task.job, config->task.index).ok(),
                  "the flags' own task is not in the cluster");
    }
  }
  return 0;
}
