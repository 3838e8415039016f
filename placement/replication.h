// In-graph replication: one model tower per device with the batch split
// between them, outputs gathered and gradients averaged on the client's
// device (the multi-tower pattern of TensorFlow 1.x).
#ifndef RILL_PLACEMENT_REPLICATION_H_
#define RILL_PLACEMENT_REPLICATION_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/ops.h"

namespace rill {

// Builds one tower: `inputs` are this tower's slices; returns its outputs
// (the same number and meaning for every tower).
using TowerFn = std::function<absl::StatusOr<std::vector<Output>>(
    const Scope& scope, const std::vector<Output>& inputs, int tower)>;

// Splits each of `inputs` along dimension 0 into devices.size() equal
// slices (one Split per input, on `client_device`; the batch must divide
// evenly, else the Split fails when run), builds tower i under
// scope.NewSubScope("tower_i").WithDevice(devices[i]), and returns each
// tower output concatenated along dimension 0 (ConcatV2 on
// `client_device`). INVALID_ARGUMENT for no devices or no inputs; a tower
// error is returned naming the tower.
absl::StatusOr<std::vector<Output>> ReplicateTowers(const Scope& scope,
                                                    const std::vector<Output>& inputs,
                                                    const std::vector<std::string>& devices,
                                                    const std::string& client_device,
                                                    const TowerFn& tower);

// tower_grads[t][v]: tower t's gradient for variable v. Returns per
// variable the mean over towers (AddN, then a division by the tower count)
// on `client_device`. INVALID_ARGUMENT when towers have different counts.
absl::StatusOr<std::vector<Output>> AverageGradients(
    const Scope& scope, const std::vector<std::vector<Output>>& tower_grads,
    const std::string& client_device);

}  // namespace rill

#endif  // RILL_PLACEMENT_REPLICATION_H_
