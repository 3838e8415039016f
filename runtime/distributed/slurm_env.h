// Slurm's compressed lists as its environment writes them: host lists
// ("node[01-03,07],gpu-[1-2]") and tasks per node ("2(x3),1").
#ifndef RILL_RUNTIME_DISTRIBUTED_SLURM_ENV_H_
#define RILL_RUNTIME_DISTRIBUTED_SLURM_ENV_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rill {

// The most hosts or tasks one list may expand to: a typo such as
// "n[0-999999999]" is an error, not an allocation of gigabytes.
inline constexpr int kMaxSlurmListEntries = 1 << 20;

// The host names of Slurm's host-list syntax, in order: comma-separated
// entries, each a name with any number of bracket groups of numbers and
// ranges ("tux[0-3]", "node[01-03,07]": zero padding is kept, as wide as
// the range's first number; "c[1-2]-[1-2]": the Cartesian product, the
// first group varying slowest, as Slurm expands it). Errors are
// INVALID_ARGUMENT naming `variable`, the text and the 1-based byte where
// it goes wrong: "SLURM_STEP_NODELIST 'node[01-': unclosed '[' at byte 5".
absl::StatusOr<std::vector<std::string>> ExpandSlurmHostList(std::string_view text,
                                                             std::string_view variable);

// Tasks per node, one entry per node: "2(x3),1" is 2, 2, 2, 1. Errors as
// ExpandSlurmHostList's; every count must be at least 1.
absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(std::string_view text,
                                                         std::string_view variable);

// A comma-separated device list as CUDA_VISIBLE_DEVICES or SLURM_STEP_GPUS
// write it ("0,1", "GPU-8f3a...,GPU-1b2c..."); empty text is no device.
// Errors name `variable` and the byte of an empty entry.
absl::StatusOr<std::vector<std::string>> SplitDeviceList(std::string_view text,
                                                         std::string_view variable);

// The devices of task `local_index` of `tasks_on_node` sharing `node_gpus`,
// as TensorFlow's SlurmClusterResolver splits them: each task gets
// node_gpus / tasks_on_node of them, in order, and the rest go unused;
// with fewer GPUs than tasks every task gets none.
// REQUIRES: 0 <= local_index < tasks_on_node.
std::vector<std::string> GpusOfTask(const std::vector<std::string>& node_gpus, int tasks_on_node,
                                    int local_index);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_SLURM_ENV_H_
