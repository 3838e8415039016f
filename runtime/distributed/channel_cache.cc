#include "runtime/distributed/channel_cache.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// Learned addresses are bounded, so that masters cannot grow the table
// without end; a real job has far fewer workers.
constexpr size_t kMaxLearnedTasks = 4096;

}  // namespace

absl::StatusOr<std::string> ChannelCache::Address(const std::string& task) const {
  ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(task));
  absl::StatusOr<std::string> address =
      cluster_.TaskAddress(spec.job.value_or(""), spec.task.value_or(-1));
  if (address.ok()) return address;
  absl::MutexLock lock(&mu_);
  if (auto it = learned_.find(task); it != learned_.end()) return it->second;
  return address.status();
}

absl::StatusOr<RpcClient*> ChannelCache::Get(const std::string& task) {
  absl::StatusOr<std::string> address = Address(task);
  absl::MutexLock lock(&mu_);
  std::unique_ptr<RpcClient>& client = clients_[task];
  if (client == nullptr) {
    absl::StatusOr<std::unique_ptr<RpcClient>> connected =
        [&]() -> absl::StatusOr<std::unique_ptr<RpcClient>> {
      RETURN_IF_ERROR(address.status());
      RpcClientOptions options = options_;
      options.address = *address;
      options.inline_callbacks = true;
      return RpcClient::Connect(options);
    }();
    if (!connected.ok()) {
      clients_.erase(task);
      return connected.status();
    }
    client = *std::move(connected);
  }
  return client.get();
}

absl::Status ChannelCache::Learn(const std::string& task, const std::string& address) {
  ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(task));
  if (!spec.job || !spec.task) {
    return absl::InvalidArgumentError(
        absl::StrFormat("task '%s' names no job and task index", task));
  }
  if (const absl::StatusOr<std::string> known = cluster_.TaskAddress(*spec.job, *spec.task);
      known.ok()) {
    if (*known == address) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "task %s listens at %s in this server's cluster, not at %s", task, *known, address));
  }
  // The same checks as a cluster spec's address.
  RETURN_IF_ERROR(ClusterSpec::FromJobs({{*spec.job, {address}}}).status());
  absl::MutexLock lock(&mu_);
  auto [it, added] = learned_.try_emplace(task, address);
  if (added) {
    if (learned_.size() > kMaxLearnedTasks) {
      learned_.erase(it);
      return absl::ResourceExhaustedError(
          absl::StrFormat("this server knows %d joined tasks already", kMaxLearnedTasks));
    }
    return absl::OkStatus();
  }
  if (it->second == address) return absl::OkStatus();
  if (moved_.size() >= kMaxLearnedTasks) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("joined tasks moved %d times on this server already", moved_.size()));
  }
  it->second = address;
  if (auto client = clients_.find(task); client != clients_.end()) {
    moved_.push_back(std::move(client->second));
    clients_.erase(client);
  }
  return absl::OkStatus();
}

bool ChannelCache::Reconnect(const std::string& task) {
  absl::MutexLock lock(&mu_);
  auto client = clients_.find(task);
  if (client == clients_.end() || retired_.size() >= static_cast<size_t>(kMaxRetired)) {
    return false;
  }
  retired_.push_back(std::move(client->second));
  clients_.erase(client);
  return true;
}

int ChannelCache::reconnects() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(retired_.size());
}

}  // namespace rill
