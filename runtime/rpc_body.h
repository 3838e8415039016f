// The master's and worker's RPC bodies: requests parsed with an error that
// names the method, replies serialized.
#ifndef RILL_RUNTIME_RPC_BODY_H_
#define RILL_RUNTIME_RPC_BODY_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/message.h"
#include "transport/rpc.h"

namespace rill {

template <typename Proto>
absl::StatusOr<Proto> ParseBody(const RpcMessage& message, const char* method) {
  Proto proto;
  if (!proto.ParseFromString(message.body)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the request body is not a valid %s", method, proto.GetTypeName()));
  }
  return proto;
}

inline RpcMessage Reply(const google::protobuf::Message& body) {
  return RpcMessage{body.SerializeAsString(), {}};
}

}  // namespace rill

#endif  // RILL_RUNTIME_RPC_BODY_H_
