#include "runtime/distributed/channel_cache.h"

#include "graph/device_spec.h"
#include "graph/status_macros.h"

namespace rill {

absl::StatusOr<RpcClient*> ChannelCache::Get(const std::string& task) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<RpcClient>& client = clients_[task];
  if (client == nullptr) {
    absl::StatusOr<std::unique_ptr<RpcClient>> connected =
        [&]() -> absl::StatusOr<std::unique_ptr<RpcClient>> {
      ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(task));
      RpcClientOptions options = options_;
      ASSIGN_OR_RETURN(options.address,
                       cluster_.TaskAddress(spec.job.value_or(""), spec.task.value_or(-1)));
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

}  // namespace rill
