// A server's configuration from TF_CONFIG, the JSON environment variable
// through which Kubernetes operators and TensorFlow's tools configure a task.
#ifndef RILL_RUNTIME_DISTRIBUTED_TF_CONFIG_H_
#define RILL_RUNTIME_DISTRIBUTED_TF_CONFIG_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "runtime/distributed/cluster_spec.h"

namespace rill {

// TF_CONFIG: {"cluster": {"ps": ["h:p", ...], "worker": [...]}, "task":
// {"type": "worker", "index": 0}}. A job may also be a sparse object
// {"1": "h:p"}. "chief" and "evaluator" jobs are kept like any other.
// Errors name the JSON problem (with its position) or the missing field.
absl::StatusOr<ServerConfig> ServerConfigFromTfConfig(std::string_view json);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_TF_CONFIG_H_
