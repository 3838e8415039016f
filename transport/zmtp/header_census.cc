#include "transport/zmtp/header_census.h"

#include <algorithm>
#include <climits>

#include "google/protobuf/io/coded_stream.h"

namespace rill::zmtp {
namespace {

using google::protobuf::io::CodedInputStream;

// Field numbers of rpc.proto and tensor_shape.proto.
constexpr int kMethod = 1;
constexpr int kRequestId = 2;
constexpr int kTensors = 7;
constexpr int kMetaShape = 2;
constexpr int kShapeDim = 2;

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Skips one field's value; false when it runs past the end or is a group
// (which no rill header holds).
bool SkipValue(CodedInputStream& input, int wire_type) {
  switch (wire_type) {
    case kVarint: {
      uint64_t ignored = 0;
      return input.ReadVarint64(&ignored);
    }
    case kFixed64:
      return input.Skip(8);
    case kLengthDelimited: {
      uint32_t length = 0;
      return input.ReadVarint32(&length) && length <= INT_MAX &&
             input.Skip(static_cast<int>(length));
    }
    case kFixed32:
      return input.Skip(4);
    default:
      return false;
  }
}

// Calls `field(number, wire_type)` for each field of the message that
// fills `input`; the callback consumes the value (or returns false to have
// it skipped). False when the message is malformed.
template <typename OnField>
bool ForEachField(CodedInputStream& input, OnField field) {
  for (;;) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) return input.ConsumedEntireMessage();
    const int number = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    if (number == 0) return false;
    bool consumed = false;
    if (!field(number, wire_type, &consumed)) return false;
    if (!consumed && !SkipValue(input, wire_type)) return false;
  }
}

// Enters a length-delimited value, runs `inner` on it, and leaves it.
template <typename Inner>
bool Nested(CodedInputStream& input, Inner inner) {
  uint32_t length = 0;
  if (!input.ReadVarint32(&length) || length > INT_MAX) return false;
  const CodedInputStream::Limit limit = input.PushLimit(static_cast<int>(length));
  const bool ok = inner() && input.BytesUntilLimit() == 0;
  input.PopLimit(limit);
  return ok;
}

}  // namespace

HeaderCensus CountHeader(std::string_view bytes) {
  HeaderCensus census;
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return census;
  CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                         static_cast<int>(bytes.size()));
  input.SetTotalBytesLimit(INT_MAX);
  const auto count_dims = [&](int64_t* dims) {
    return ForEachField(input, [&](int number, int wire_type, bool* consumed) {
      if (number == kShapeDim && wire_type == kLengthDelimited) ++*dims;
      *consumed = false;  // Skipped: only the count matters.
      return true;
    });
  };
  const auto count_tensor = [&] {
    int64_t dims = 0;  // A shape given twice merges: its dimensions add up.
    const bool ok = ForEachField(input, [&](int number, int wire_type, bool* consumed) {
      if (number != kMetaShape || wire_type != kLengthDelimited) return true;
      *consumed = true;
      return Nested(input, [&] { return count_dims(&dims); });
    });
    ++census.tensors;
    census.dims += dims;
    census.max_dims = std::max(census.max_dims, dims);
    return ok;
  };
  census.well_formed = ForEachField(input, [&](int number, int wire_type, bool* consumed) {
    if (number == kMethod && wire_type == kLengthDelimited) {
      *consumed = true;
      uint32_t length = 0;
      const void* data = nullptr;
      int available = 0;
      if (!input.ReadVarint32(&length) || length > INT_MAX) return false;
      if (!input.GetDirectBufferPointer(&data, &available)) return length == 0;
      if (static_cast<uint32_t>(available) < length) return false;
      census.method = std::string_view(static_cast<const char*>(data), length);
      return input.Skip(static_cast<int>(length));
    }
    if (number == kRequestId && wire_type == kVarint) {
      *consumed = true;
      census.has_request_id = input.ReadVarint64(&census.request_id);
      return census.has_request_id;
    }
    if (number == kTensors && wire_type == kLengthDelimited) {
      *consumed = true;
      return Nested(input, count_tensor);
    }
    return true;
  });
  return census;
}

}  // namespace rill::zmtp
