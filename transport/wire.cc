#include "transport/wire.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

constexpr size_t kLengthPrefixBytes = 8;

bool TravelsAsObjects(DataType dtype) {
  return dtype == DT_STRING || dtype == DT_RESOURCE || dtype == DT_VARIANT;
}

// Size and alignment of one element; {0, 0} for dtypes that are not plain
// bytes.
std::pair<size_t, size_t> NumericLayout(DataType dtype) {
  if (TravelsAsObjects(dtype)) return {0, 0};
  return DispatchType(
      dtype, []<typename T>() { return std::pair<size_t, size_t>(sizeof(T), alignof(T)); },
      [] { return std::pair<size_t, size_t>(0, 0); });
}

void ReleaseTensor(void* /*data*/, void* hint) { delete static_cast<Tensor*>(hint); }

void AppendLengthPrefixed(const std::string& bytes, std::string* out) {
  uint64_t length = bytes.size();
  char prefix[kLengthPrefixBytes];
  for (size_t i = 0; i < kLengthPrefixBytes; ++i) {
    prefix[i] = static_cast<char>(length & 0xff);
    length >>= 8;
  }
  out->append(prefix, kLengthPrefixBytes);
  out->append(bytes);
}

zmq::message_t EncodeObjects(const Tensor& tensor) {
  std::string frame;
  const int64_t n = tensor.NumElements();
  if (tensor.dtype() == DT_STRING) {
    const std::string* values = tensor.data<std::string>();
    for (int64_t i = 0; i < n; ++i) AppendLengthPrefixed(values[i], &frame);
  } else if (tensor.dtype() == DT_VARIANT) {
    const Variant* values = tensor.data<Variant>();
    for (int64_t i = 0; i < n; ++i) {
      AppendLengthPrefixed(EncodeVariant(values[i]).SerializeAsString(), &frame);
    }
  } else {
    const auto* handles = static_cast<const ResourceHandleProto*>(tensor.raw_data());
    for (int64_t i = 0; i < n; ++i) AppendLengthPrefixed(handles[i].SerializeAsString(), &frame);
  }
  return zmq::message_t(frame.data(), frame.size());
}

// Owns a received frame and hands its memory to exactly one TensorBuffer,
// which frees the frame (and this allocator) when the last tensor sharing
// it goes away.
class FrameAllocator final : public Allocator {
 public:
  explicit FrameAllocator(zmq::message_t frame) : frame_(std::move(frame)) {}
  std::string Name() const override { return "received frame"; }
  void* AllocateRaw(size_t /*alignment*/, size_t bytes) override {
    return bytes == frame_.size() ? frame_.data() : nullptr;
  }
  void DeallocateRaw(void* /*ptr*/, size_t /*bytes*/) override { delete this; }
  const zmq::message_t& frame() const { return frame_; }

 private:
  zmq::message_t frame_;
};

absl::Status CheckBools(DataType dtype, const void* data, size_t size) {
  if (dtype != DT_BOOL) return absl::OkStatus();
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    if (bytes[i] > 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bool element %d has byte value %d", i, bytes[i]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DecodeNumeric(DataType dtype, const TensorShape& shape, size_t alignment,
                                     zmq::message_t frame) {
  RETURN_IF_ERROR(CheckBools(dtype, frame.data(), frame.size()));
  if (frame.size() == 0) return Tensor::Allocate(CpuAllocator(), dtype, shape);
  // The frame moves into the allocator first: a small frame's bytes live
  // inside the message object, so only its final address counts.
  auto allocator = std::make_unique<FrameAllocator>(std::move(frame));
  const zmq::message_t& held = allocator->frame();
  if (reinterpret_cast<uintptr_t>(held.data()) % alignment == 0) {
    absl::StatusOr<Tensor> tensor = Tensor::Allocate(allocator.get(), dtype, shape);
    if (tensor.ok()) allocator.release();  // Now owned by the tensor's buffer.
    return tensor;
  }
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(CpuAllocator(), dtype, shape));
  std::memcpy(tensor.raw_data(), held.data(), held.size());
  return tensor;
}

absl::StatusOr<Tensor> DecodeObjects(DataType dtype, const TensorShape& shape,
                                     const zmq::message_t& frame) {
  const int64_t n = shape.num_elements();
  // Every element costs at least its prefix, which bounds what a hostile
  // shape can make us allocate.
  if (static_cast<uint64_t>(n) > frame.size() / kLengthPrefixBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d elements need at least %d bytes of length prefixes, frame has %d", n,
                        static_cast<uint64_t>(n) * kLengthPrefixBytes, frame.size()));
  }
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(CpuAllocator(), dtype, shape));
  const auto* bytes = frame.data<const unsigned char>();
  size_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (frame.size() - pos < kLengthPrefixBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("element %d: length prefix cut off at byte %d", i, pos));
    }
    uint64_t length = 0;
    for (size_t b = kLengthPrefixBytes; b-- > 0;) length = (length << 8) | bytes[pos + b];
    pos += kLengthPrefixBytes;
    if (length > frame.size() - pos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "element %d: length %d exceeds the %d bytes left", i, length, frame.size() - pos));
    }
    const char* start = reinterpret_cast<const char*>(bytes + pos);
    if (dtype == DT_STRING) {
      tensor.data<std::string>()[i].assign(start, length);
    } else if (dtype == DT_VARIANT) {
      VariantTensorDataProto proto;
      if (!proto.ParseFromArray(start, static_cast<int>(length))) {
        return absl::InvalidArgumentError(absl::StrFormat("element %d is not a variant", i));
      }
      absl::StatusOr<Variant> value = DecodeVariant(proto);
      if (!value.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("element %d: %s", i, value.status().message()));
      }
      tensor.data<Variant>()[i] = *std::move(value);
    } else {
      auto* handles = static_cast<ResourceHandleProto*>(tensor.raw_data());
      if (!handles[i].ParseFromArray(start, static_cast<int>(length))) {
        return absl::InvalidArgumentError(
            absl::StrFormat("element %d is not a resource handle", i));
      }
    }
    pos += length;
  }
  if (pos != frame.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d trailing bytes after %d elements", frame.size() - pos, n));
  }
  return tensor;
}

// A numeric tensor whose bytes wait in the sender's shared memory: it
// borrows the block, without a copy, until its last copy goes.
absl::StatusOr<Tensor> DecodeShared(DataType dtype, const TensorShape& shape, uint64_t bytes,
                                    const ShmRef& ref, ShmPeer* shm) {
  if (shm == nullptr) {
    return absl::InvalidArgumentError(
        "its bytes are in shared memory, which only a process on this machine's ipc socket may "
        "send");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Allocator> block, shm->Claim(ref, bytes));
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(block.get(), dtype, shape));
  block.release();  // Now owned by the tensor's buffer.
  RETURN_IF_ERROR(CheckBools(dtype, tensor.raw_data(), bytes));
  return tensor;
}

absl::StatusOr<Tensor> DecodeTensor(const TensorMeta& meta, zmq::message_t frame, ShmPeer* shm) {
  const DataType dtype = meta.dtype();
  if (IsRefType(dtype) ||
      !(DataTypeCanBeStored(dtype) || dtype == DT_RESOURCE || dtype == DT_VARIANT)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dtype %s cannot travel", DataTypeString(dtype)));
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromProto(meta.shape()));
  if (frame.size() != meta.bytes()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d bytes, header says %d", frame.size(), meta.bytes()));
  }
  if (TravelsAsObjects(dtype)) {
    if (meta.has_shm()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("a %s tensor cannot be in shared memory", DataTypeString(dtype)));
    }
    return DecodeObjects(dtype, shape, frame);
  }
  const auto [element_size, alignment] = NumericLayout(dtype);
  uint64_t expected = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(shape.num_elements()),
                             static_cast<uint64_t>(element_size), &expected) ||
      (meta.has_shm() ? expected == 0 || frame.size() != 0 : expected != frame.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d bytes%s, but shape %s of %s needs %d elements of %d bytes", frame.size(),
        meta.has_shm() ? " beside a shared-memory block" : "", shape.DebugString(),
        DataTypeString(dtype), shape.num_elements(), element_size));
  }
  if (meta.has_shm()) return DecodeShared(dtype, shape, expected, meta.shm(), shm);
  return DecodeNumeric(dtype, shape, alignment, std::move(frame));
}

}  // namespace

zmq::message_t EncodeHeader(const RpcHeader& header) {
  const std::string bytes = header.SerializeAsString();
  return zmq::message_t(bytes.data(), bytes.size());
}

absl::StatusOr<std::vector<zmq::message_t>> EncodeTensors(const std::vector<Tensor>& tensors,
                                                          RpcHeader* header, ShmArena* shm) {
  header->clear_tensors();
  std::vector<zmq::message_t> frames;
  frames.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& tensor = tensors[i];
    if (!tensor.IsInitialized()) {
      return absl::InvalidArgumentError(absl::StrFormat("tensor %d is uninitialized", i));
    }
    TensorMeta* meta = header->add_tensors();
    meta->set_dtype(tensor.dtype());
    tensor.shape().AsProto(meta->mutable_shape());
    if (TravelsAsObjects(tensor.dtype())) {
      frames.push_back(EncodeObjects(tensor));
    } else if (NumericLayout(tensor.dtype()).first == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor %d has dtype %s, which cannot travel", i, DataTypeString(tensor.dtype())));
    } else if (tensor.TotalBytes() == 0) {
      frames.emplace_back();
    } else if (std::optional<ShmRef> ref;
               shm != nullptr && tensor.TotalBytes() >= shm->min_bytes() &&
               (ref = shm->Place(tensor.raw_data(), tensor.TotalBytes()))) {
      *meta->mutable_shm() = *std::move(ref);
      frames.emplace_back();
    } else {
      // The frame references the buffer; the heap Tensor keeps it alive
      // until ZeroMQ has sent it.
      frames.emplace_back(tensor.raw_data(), tensor.TotalBytes(), &ReleaseTensor,
                          new Tensor(tensor));
    }
    meta->set_bytes(frames.back().size());
  }
  return frames;
}

absl::StatusOr<std::vector<zmq::message_t>> EncodeMessage(RpcHeader header,
                                                          const std::vector<Tensor>& tensors) {
  ASSIGN_OR_RETURN(std::vector<zmq::message_t> tensor_frames, EncodeTensors(tensors, &header));
  std::vector<zmq::message_t> frames;
  frames.reserve(tensor_frames.size() + 1);
  frames.push_back(EncodeHeader(header));
  for (zmq::message_t& frame : tensor_frames) frames.push_back(std::move(frame));
  return frames;
}

absl::StatusOr<RpcHeader> DecodeHeader(const zmq::message_t& frame) {
  RpcHeader header;
  if (frame.size() > static_cast<size_t>(INT32_MAX) ||
      !header.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("header frame (%d bytes) is not an RpcHeader", frame.size()));
  }
  return header;
}

absl::StatusOr<std::vector<Tensor>> DecodeTensors(const RpcHeader& header,
                                                  std::vector<zmq::message_t>& frames, size_t first,
                                                  ShmPeer* shm) {
  const size_t have = frames.size() > first ? frames.size() - first : 0;
  if (have != static_cast<size_t>(header.tensors_size())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("header describes %d tensors but the message has %d tensor frames",
                        header.tensors_size(), have));
  }
  std::vector<Tensor> tensors;
  tensors.reserve(have);
  for (size_t i = 0; i < have; ++i) {
    absl::StatusOr<Tensor> tensor =
        DecodeTensor(header.tensors(static_cast<int>(i)), std::move(frames[first + i]), shm);
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("frame %d (tensor %d): %s", first + i, i, tensor.status().message()));
    }
    tensors.push_back(*std::move(tensor));
  }
  return tensors;
}

bool UsesSharedMemory(const RpcHeader& header) {
  for (const TensorMeta& meta : header.tensors()) {
    if (meta.has_shm()) return true;
  }
  return false;
}

void ReleaseSharedTensors(const RpcHeader& header, ShmPeer* shm) {
  if (shm == nullptr) return;
  for (const TensorMeta& meta : header.tensors()) {
    if (!meta.has_shm()) continue;
    absl::StatusOr<Tensor> tensor = DecodeTensor(meta, zmq::message_t(), shm);
    (void)tensor;  // Dropped at once: the block goes back to its sender.
  }
}

absl::StatusOr<DecodedMessage> DecodeMessage(std::vector<zmq::message_t> frames) {
  if (frames.empty()) return absl::InvalidArgumentError("empty message: no header frame");
  DecodedMessage message;
  ASSIGN_OR_RETURN(message.header, DecodeHeader(frames[0]));
  ASSIGN_OR_RETURN(message.tensors, DecodeTensors(message.header, frames, 1));
  return message;
}

}  // namespace rill
