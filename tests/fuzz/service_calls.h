// The service fuzz targets' inputs: messages (split at kMessageSeparator)
// of frames (split at kPartSeparator), decoded as RpcServer decodes them
// and handed to the method it would call.
#ifndef RILL_TESTS_FUZZ_SERVICE_CALLS_H_
#define RILL_TESTS_FUZZ_SERVICE_CALLS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "transport/rpc.h"

namespace rill::fuzz {

struct ServiceRequest {
  std::string method;
  RpcMessage message;
};

// The requests a server would hand to a method, in order. Left out: what
// it drops (no header frame, a reply) or answers itself (its own methods,
// tensors that do not decode).
std::vector<ServiceRequest> DecodeRequests(std::string_view input);

// One call's outcome.
struct ServiceCall {
  absl::Notification done;
  absl::Status status;
  RpcMessage reply;

  bool WaitFor(absl::Duration timeout) { return done.WaitForNotificationWithTimeout(timeout); }
};

// Starts `request` on the method of that name; null for a method the
// service does not have (which the server answers UNIMPLEMENTED).
std::shared_ptr<ServiceCall> StartCall(const std::vector<RpcMethod>& methods,
                                       ServiceRequest request);

}  // namespace rill::fuzz

#endif  // RILL_TESTS_FUZZ_SERVICE_CALLS_H_
