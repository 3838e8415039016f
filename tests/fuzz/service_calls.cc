#include "tests/fuzz/service_calls.h"

#include <utility>

#include "tests/fuzz/fuzz_util.h"
#include "transport/wire.h"

namespace rill::fuzz {

std::vector<ServiceRequest> DecodeRequests(std::string_view input) {
  std::vector<ServiceRequest> requests;
  for (std::string_view message : Split(input, kMessageSeparator)) {
    std::vector<zmq::message_t> frames;
    for (std::string_view part : Split(message, kPartSeparator)) {
      frames.emplace_back(part.data(), part.size());
    }
    absl::StatusOr<RpcHeader> header = DecodeHeader(frames[0]);
    if (!header.ok() || header->is_reply()) continue;
    absl::StatusOr<std::vector<Tensor>> tensors = DecodeTensors(*header, frames, 1);
    if (!tensors.ok()) continue;
    requests.push_back(
        ServiceRequest{header->method(), RpcMessage{header->body(), *std::move(tensors)}});
  }
  return requests;
}

std::shared_ptr<ServiceCall> StartCall(const std::vector<RpcMethod>& methods,
                                       ServiceRequest request) {
  for (const RpcMethod& method : methods) {
    if (method.name != request.method) continue;
    auto call = std::make_shared<ServiceCall>();
    method.handler(std::move(request.message), [call](absl::Status status, RpcMessage reply) {
      Check(!call->done.HasBeenNotified(), "a method answered twice");
      call->status = std::move(status);
      call->reply = std::move(reply);
      call->done.Notify();
    });
    return call;
  }
  return nullptr;
}

}  // namespace rill::fuzz
