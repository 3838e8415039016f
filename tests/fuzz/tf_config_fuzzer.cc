// The TF_CONFIG environment variable (JSON) as `rill server` reads it.
// Invariants: the task it names is in its cluster, and the cluster prints
// as text that parses to the same cluster.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/tf_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  absl::StatusOr<ServerConfig> config = ServerConfigFromTfConfig(fuzz::AsView(data, size));
  if (!config.ok()) return 0;
  fuzz::Check(config->cluster.TaskAddress(config->task.job, config->task.index).ok(),
              "TF_CONFIG's own task is not in its cluster");
  const std::string text = config->cluster.ToString();
  absl::StatusOr<ClusterSpec> again = ClusterSpec::Parse(text);
  fuzz::Check(again.ok() && again->ToString() == text, "a cluster changed in a round trip");
  return 0;
}
