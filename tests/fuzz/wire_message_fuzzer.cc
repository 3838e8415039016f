// One RPC message as the transport receives it (frames split at
// kPartSeparator: the RpcHeader, then one frame per tensor), decoded as
// the server and the client decode it: the header, then the tensors into
// the frames' memory. Invariant: what decodes encodes again and decodes to
// the same header and tensors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "transport/rpc_internal.h"
#include "transport/wire.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rill::fuzz::Initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  std::vector<zmq::message_t> frames;
  for (std::string_view part : fuzz::Split(fuzz::AsView(data, size), fuzz::kPartSeparator)) {
    frames.emplace_back(part.data(), part.size());
  }
  absl::StatusOr<DecodedMessage> message = DecodeMessage(std::move(frames));
  if (!message.ok()) return 0;
  // What each side reads of a header besides the tensors.
  (void)rpc_internal::StatusFromReply(message->header);
  uint64_t touched = 0;
  for (const Tensor& tensor : message->tensors) {
    touched += fuzz::TouchElements(tensor);
    (void)tensor.SummarizeValue(8);
  }
  (void)touched;

  absl::StatusOr<std::vector<zmq::message_t>> encoded =
      EncodeMessage(message->header, message->tensors);
  fuzz::Check(encoded.ok(), "decoded tensors do not encode");
  absl::StatusOr<DecodedMessage> again = DecodeMessage(*std::move(encoded));
  fuzz::Check(again.ok(), "an encoded message does not decode");
  // The tensor metadata is written anew (a shape in canonical form).
  RpcHeader sent = message->header;
  RpcHeader received = again->header;
  sent.clear_tensors();
  received.clear_tensors();
  fuzz::Check(received.SerializeAsString() == sent.SerializeAsString(),
              "the header changed in a round trip");
  fuzz::Check(again->tensors.size() == message->tensors.size(),
              "the tensor count changed in a round trip");
  for (size_t i = 0; i < again->tensors.size(); ++i) {
    fuzz::Check(fuzz::SameTensor(again->tensors[i], message->tensors[i]),
                "a tensor changed in a round trip");
  }
  return 0;
}
