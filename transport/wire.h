// The wire format of an RPC message: an RpcHeader frame, then one raw frame
// per tensor. Numeric tensors travel as their element bytes, sent without a
// copy and received into the frame's own memory when it is aligned.
// DT_STRING, DT_RESOURCE and DT_VARIANT tensors travel as one frame of
// length-prefixed elements: for each element an 8-byte little-endian
// length, then the string (or the serialized ResourceHandleProto or
// VariantTensorDataProto). Between processes of one
// machine, a large numeric tensor may wait in the sender's shared memory
// instead (transport/shm_arena.h): its frame is empty.
#ifndef RILL_TRANSPORT_WIRE_H_
#define RILL_TRANSPORT_WIRE_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "transport/proto/rpc.pb.h"
#include "transport/shm_arena.h"
#include "zmq.hpp"

namespace rill {

// A frame holding `header` serialized.
zmq::message_t EncodeHeader(const RpcHeader& header);

// One frame per tensor; fills header->tensors with their metadata (any
// metadata already there is replaced). A numeric frame keeps a reference
// to its tensor's buffer until ZeroMQ releases it. With `shm`, numeric
// tensors of at least shm->min_bytes() are copied into it while it has
// room. INVALID_ARGUMENT for an uninitialized tensor or a dtype that
// cannot travel.
absl::StatusOr<std::vector<zmq::message_t>> EncodeTensors(const std::vector<Tensor>& tensors,
                                                          RpcHeader* header,
                                                          ShmArena* shm = nullptr);

// [header frame, tensor frames...] as sent.
absl::StatusOr<std::vector<zmq::message_t>> EncodeMessage(RpcHeader header,
                                                          const std::vector<Tensor>& tensors);

// Parses a header frame. INVALID_ARGUMENT when the bytes are not one.
absl::StatusOr<RpcHeader> DecodeHeader(const zmq::message_t& frame);

// The tensors described by header.tensors, from frames[first...]; consumes
// those frames. Tensors in shared memory are claimed from `shm`, the
// sender's arenas (null: the sender is not a process on this machine).
// INVALID_ARGUMENT naming the frame for a frame count, size, dtype, shape,
// encoding or shared-memory block that does not match.
absl::StatusOr<std::vector<Tensor>> DecodeTensors(const RpcHeader& header,
                                                  std::vector<zmq::message_t>& frames, size_t first,
                                                  ShmPeer* shm = nullptr);

// Whether some tensor of the message waits in shared memory.
bool UsesSharedMemory(const RpcHeader& header);

// Gives the shared-memory blocks of a message that will not be decoded
// back to their sender.
void ReleaseSharedTensors(const RpcHeader& header, ShmPeer* shm);

struct DecodedMessage {
  RpcHeader header;
  std::vector<Tensor> tensors;
};
// The inverse of EncodeMessage.
absl::StatusOr<DecodedMessage> DecodeMessage(std::vector<zmq::message_t> frames);

}  // namespace rill

#endif  // RILL_TRANSPORT_WIRE_H_
