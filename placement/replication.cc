#include "placement/replication.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/types.h"

namespace rill {
namespace {

// The same error, its message prefixed with which tower it came from.
absl::Status InTower(const absl::Status& status, int tower, const std::string& device) {
  return absl::Status(status.code(), absl::StrFormat("tower %d on '%s': %s", tower, device,
                                                     std::string(status.message())));
}

}  // namespace

absl::StatusOr<std::vector<Output>> ReplicateTowers(const Scope& scope,
                                                    const std::vector<Output>& inputs,
                                                    const std::vector<std::string>& devices,
                                                    const std::string& client_device,
                                                    const TowerFn& tower) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("ReplicateTowers needs at least one device");
  }
  if (inputs.empty()) {
    return absl::InvalidArgumentError("ReplicateTowers needs at least one input to split");
  }
  RETURN_IF_ERROR(scope.status());
  const Scope client = scope.WithDevice(client_device);
  const int num_towers = static_cast<int>(devices.size());

  // slices[t][i]: tower t's part of input i.
  std::vector<std::vector<Output>> slices(num_towers);
  for (const Output& input : inputs) {
    const ops::Split split(client, 0, input, num_towers);
    RETURN_IF_ERROR(client.status());
    for (int t = 0; t < num_towers; ++t) slices[t].push_back(split.output[t]);
  }

  // outputs[t][o]: tower t's output o.
  std::vector<std::vector<Output>> outputs;
  outputs.reserve(num_towers);
  for (int t = 0; t < num_towers; ++t) {
    const Scope tower_scope =
        scope.NewSubScope(absl::StrFormat("tower_%d", t)).WithDevice(devices[t]);
    if (!tower_scope.ok()) return InTower(tower_scope.status(), t, devices[t]);
    absl::StatusOr<std::vector<Output>> built = tower(tower_scope, slices[t], t);
    if (!built.ok()) return InTower(built.status(), t, devices[t]);
    if (!tower_scope.ok()) return InTower(tower_scope.status(), t, devices[t]);
    if (t > 0 && built->size() != outputs[0].size()) {
      return InTower(
          absl::InvalidArgumentError(absl::StrFormat(
              "returned %d outputs where tower 0 returned %d", built->size(), outputs[0].size())),
          t, devices[t]);
    }
    for (size_t o = 0; o < built->size(); ++o) {
      if (!(*built)[o].ok()) {
        return InTower(absl::InvalidArgumentError(absl::StrFormat("output %d is null", o)), t,
                       devices[t]);
      }
    }
    outputs.push_back(*std::move(built));
  }

  std::vector<Output> gathered;
  gathered.reserve(outputs[0].size());
  for (size_t o = 0; o < outputs[0].size(); ++o) {
    std::vector<Output> parts;
    parts.reserve(num_towers);
    for (int t = 0; t < num_towers; ++t) parts.push_back(outputs[t][o]);
    gathered.push_back(ops::ConcatV2(client, parts, 0));
    RETURN_IF_ERROR(client.status());
  }
  return gathered;
}

absl::StatusOr<std::vector<Output>> AverageGradients(
    const Scope& scope, const std::vector<std::vector<Output>>& tower_grads,
    const std::string& client_device) {
  if (tower_grads.empty()) {
    return absl::InvalidArgumentError("AverageGradients needs the gradients of at least one tower");
  }
  const size_t num_vars = tower_grads[0].size();
  for (size_t t = 1; t < tower_grads.size(); ++t) {
    if (tower_grads[t].size() != num_vars) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AverageGradients: tower %d has %d gradients where tower 0 has %d", t,
                          tower_grads[t].size(), num_vars));
    }
  }
  RETURN_IF_ERROR(scope.status());
  const Scope client = scope.NewSubScope("average_gradients").WithDevice(client_device);
  const int num_towers = static_cast<int>(tower_grads.size());

  std::vector<Output> averages;
  averages.reserve(num_vars);
  for (size_t v = 0; v < num_vars; ++v) {
    std::vector<Output> grads;
    grads.reserve(num_towers);
    for (int t = 0; t < num_towers; ++t) {
      if (!tower_grads[t][v].ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("AverageGradients: tower %d's gradient %d is null", t, v));
      }
      grads.push_back(tower_grads[t][v]);
    }
    const Output sum = ops::AddN(client, grads);
    const Output count = ops::Cast(client, num_towers, BaseType(sum.type()));
    averages.push_back(ops::Div(client, sum, count));
    RETURN_IF_ERROR(client.status());
  }
  return averages;
}

}  // namespace rill
