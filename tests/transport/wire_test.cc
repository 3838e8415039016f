#include "transport/wire.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/tensor_list.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

std::vector<zmq::message_t> RoundTripFrames(const std::vector<Tensor>& tensors) {
  RpcHeader header;
  header.set_method("Echo");
  absl::StatusOr<std::vector<zmq::message_t>> frames = EncodeMessage(header, tensors);
  EXPECT_OK(frames);
  return frames.ok() ? *std::move(frames) : std::vector<zmq::message_t>();
}

std::vector<Tensor> RoundTrip(const std::vector<Tensor>& tensors) {
  absl::StatusOr<DecodedMessage> decoded = DecodeMessage(RoundTripFrames(tensors));
  EXPECT_OK(decoded);
  return decoded.ok() ? decoded->tensors : std::vector<Tensor>();
}

// A message of one tensor described by `meta` whose frame holds `bytes`.
std::vector<zmq::message_t> MessageWith(const TensorMeta& meta, const std::string& bytes) {
  RpcHeader header;
  header.set_request_id(7);
  *header.add_tensors() = meta;
  std::vector<zmq::message_t> frames;
  frames.push_back(EncodeHeader(header));
  frames.emplace_back(bytes.data(), bytes.size());
  return frames;
}

TensorMeta Meta(DataType dtype, std::vector<int64_t> dims, uint64_t bytes) {
  TensorMeta meta;
  meta.set_dtype(dtype);
  for (int64_t d : dims) meta.mutable_shape()->add_dim()->set_size(d);
  meta.set_bytes(bytes);
  return meta;
}

std::string LengthPrefixed(const std::string& s) {
  std::string out(8, '\0');
  uint64_t n = s.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  return out + s;
}

// Counts the buffers it frees, to observe when a frame lets go of one.
class CountingAllocator final : public Allocator {
 public:
  std::string Name() const override { return "counting"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    return CpuAllocator()->AllocateRaw(alignment, bytes);
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    freed.fetch_add(1, std::memory_order_relaxed);
    CpuAllocator()->DeallocateRaw(ptr, bytes);
  }
  std::atomic<int> freed{0};
};

TEST(Wire, RoundTripsHeaderFields) {
  RpcHeader header;
  header.set_method("RunGraph");
  header.set_request_id(123456789012345);
  header.set_is_reply(true);
  header.set_status_code(5);
  header.set_status_message("not found: x");
  header.set_body(std::string("\0body\xff", 6));
  header.set_timeout_micros(2500);
  ASSERT_OK_AND_ASSIGN(std::vector<zmq::message_t> frames, EncodeMessage(header, {}));
  ASSERT_EQ(frames.size(), 1u);
  ASSERT_OK_AND_ASSIGN(DecodedMessage decoded, DecodeMessage(std::move(frames)));
  EXPECT_EQ(decoded.header.method(), "RunGraph");
  EXPECT_EQ(decoded.header.request_id(), 123456789012345u);
  EXPECT_TRUE(decoded.header.is_reply());
  EXPECT_EQ(decoded.header.status_code(), 5);
  EXPECT_EQ(decoded.header.status_message(), "not found: x");
  EXPECT_EQ(decoded.header.body(), std::string("\0body\xff", 6));
  EXPECT_EQ(decoded.header.timeout_micros(), 2500);
  EXPECT_TRUE(decoded.tensors.empty());
}

TEST(Wire, RoundTripsNumericTensorsOfSeveralDtypes) {
  std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, TensorShape({2, 3})),
      Tensor::FromVector<double>({1e300, -0.0, 3.25}, TensorShape({3})),
      Tensor::FromVector<int64_t>({INT64_MIN, 0, INT64_MAX, 7}, TensorShape({2, 1, 2})),
      Tensor::FromVector<int8_t>({-128, 1, 127}, TensorShape({3})),
      Tensor::FromVector<uint8_t>({0, 255}, TensorShape({2})),
      Tensor::FromVector<bool>({true, false, true}, TensorShape({3})),
      Tensor::FromVector<half>({half(1.5f), half(-3.0f)}, TensorShape({2})),
      Tensor::FromVector<complex128>({{1, 2}, {-3, 4.5}}, TensorShape({2})),
  };
  std::vector<Tensor> received = RoundTrip(tensors);
  ASSERT_EQ(received.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_TRUE(TensorsEqual(received[i], tensors[i]))
        << i << ": " << received[i].DebugString() << " vs " << tensors[i].DebugString();
  }
}

TEST(Wire, RoundTripsScalarsAndEmptyTensors) {
  std::vector<Tensor> tensors = {
      Tensor::Scalar<int32_t>(-42),
      Tensor(DT_FLOAT, TensorShape({0})),
      Tensor(DT_DOUBLE, TensorShape({3, 0, 2})),
      Tensor(DT_STRING, TensorShape({0})),
  };
  std::vector<zmq::message_t> frames = RoundTripFrames(tensors);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[2].size(), 0u);
  ASSERT_OK_AND_ASSIGN(DecodedMessage decoded, DecodeMessage(std::move(frames)));
  ASSERT_EQ(decoded.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_TRUE(TensorsEqual(decoded.tensors[i], tensors[i])) << i;
  }
  EXPECT_EQ(decoded.tensors[2].shape(), TensorShape({3, 0, 2}));
}

TEST(Wire, RoundTripsStringsWithEmbeddedZerosAsLengthPrefixedFrame) {
  Tensor strings(DT_STRING, TensorShape({2, 2}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = std::string("a\0b", 3);
  strings.data<std::string>()[2] = std::string(1000, 'x');
  strings.data<std::string>()[3] = "last";
  std::vector<zmq::message_t> frames = RoundTripFrames({strings});
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].size(), 4 * 8 + 0 + 3 + 1000 + 4);
  ASSERT_OK_AND_ASSIGN(DecodedMessage decoded, DecodeMessage(std::move(frames)));
  ASSERT_EQ(decoded.tensors.size(), 1u);
  EXPECT_TRUE(TensorsEqual(decoded.tensors[0], strings)) << decoded.tensors[0].DebugString();
}

TEST(Wire, RoundTripsResourceHandles) {
  ASSERT_OK_AND_ASSIGN(Tensor handles,
                       Tensor::Allocate(CpuAllocator(), DT_RESOURCE, TensorShape({2})));
  auto* h = static_cast<ResourceHandleProto*>(handles.raw_data());
  h[0].set_device("/job:ps/task:0/device:CPU:0");
  h[0].set_name("w");
  h[1].set_container("c");
  h[1].set_hash_code(99);
  std::vector<Tensor> received = RoundTrip({handles});
  ASSERT_EQ(received.size(), 1u);
  EXPECT_TRUE(TensorsEqual(received[0], handles)) << received[0].DebugString();
}

// A loop's TensorList crossing between tasks: TensorFlow's wire form of the
// variant, one length-prefixed element per list.
TEST(Wire, RoundTripsTensorLists) {
  TensorList list;
  list.element_dtype = DT_FLOAT;
  list.element_shape = PartialTensorShape({-1});
  list.tensors = {Tensor::FromVector<float>({1, 2}, {2}), Tensor()};
  Tensor lists(DT_VARIANT, TensorShape({2}));
  lists.data<Variant>()[1] = Variant(std::make_shared<TensorList>(list));
  std::vector<Tensor> received = RoundTrip({lists});
  ASSERT_EQ(received.size(), 1u);
  EXPECT_TRUE(received[0].data<Variant>()[0].empty());
  const TensorList* back = received[0].data<Variant>()[1].get<TensorList>();
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->element_shape, list.element_shape);
  ASSERT_EQ(back->tensors.size(), 2u);
  EXPECT_TRUE(TensorsEqual(back->tensors[0], list.tensors[0]));
  EXPECT_FALSE(back->tensors[1].IsInitialized());

  const std::string garbage = LengthPrefixed("\xff\xff\xff");
  EXPECT_THAT(
      DecodeMessage(MessageWith(Meta(DT_VARIANT, {1}, garbage.size()), garbage)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element 0 is not a variant")));
}

TEST(Wire, SendsTensorBytesWithoutCopyAndKeepsTheBufferAlive) {
  CountingAllocator allocator;
  std::vector<zmq::message_t> frames;
  const void* data = nullptr;
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::Allocate(&allocator, DT_INT32, TensorShape({256})));
    for (int i = 0; i < 256; ++i) tensor.data<int32_t>()[i] = i * 3;
    data = tensor.raw_data();
    RpcHeader header;
    ASSERT_OK_AND_ASSIGN(frames, EncodeTensors({tensor}, &header));
    ASSERT_EQ(header.tensors_size(), 1);
    EXPECT_EQ(header.tensors(0).bytes(), 1024u);
  }
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].data(), data);
  EXPECT_EQ(allocator.freed.load(), 0);  // The frame still holds the buffer.
  EXPECT_EQ(frames[0].data<int32_t>()[255], 255 * 3);
  frames.clear();
  EXPECT_EQ(allocator.freed.load(), 1);
}

TEST(Wire, SendsASliceAsItsOwnBytes) {
  Tensor matrix = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor rows = matrix.Slice(1, 3);
  std::vector<Tensor> received = RoundTrip({rows});
  ASSERT_EQ(received.size(), 1u);
  EXPECT_TRUE(
      TensorsEqual(received[0], Tensor::FromVector<float>({3, 4, 5, 6}, TensorShape({2, 2}))));
}

TEST(Wire, ReceivesIntoTheFrameWhenAligned) {
  std::vector<float> values(1024);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) / 2;
  zmq::message_t frame(values.data(), values.size() * sizeof(float));
  ASSERT_EQ(reinterpret_cast<uintptr_t>(frame.data()) % alignof(float), 0u);
  const void* frame_data = frame.data();
  std::vector<zmq::message_t> frames;
  RpcHeader header;
  *header.add_tensors() = Meta(DT_FLOAT, {1024}, 4096);
  frames.push_back(EncodeHeader(header));
  frames.push_back(std::move(frame));
  ASSERT_OK_AND_ASSIGN(DecodedMessage decoded, DecodeMessage(std::move(frames)));
  ASSERT_EQ(decoded.tensors.size(), 1u);
  EXPECT_EQ(decoded.tensors[0].raw_data(), frame_data);
  EXPECT_EQ(decoded.tensors[0].data<float>()[1023], 511.5f);
}

TEST(Wire, CopiesAnUnalignedFrame) {
  alignas(8) static char storage[8 * 17];
  double values[16];
  for (int i = 0; i < 16; ++i) values[i] = i * 1.25;
  std::memcpy(storage + 1, values, sizeof(values));
  zmq::message_t frame(
      storage + 1, sizeof(values), [](void*, void*) {}, nullptr);
  std::vector<zmq::message_t> frames;
  RpcHeader header;
  *header.add_tensors() = Meta(DT_DOUBLE, {4, 4}, sizeof(values));
  frames.push_back(EncodeHeader(header));
  frames.push_back(std::move(frame));
  ASSERT_OK_AND_ASSIGN(DecodedMessage decoded, DecodeMessage(std::move(frames)));
  ASSERT_EQ(decoded.tensors.size(), 1u);
  EXPECT_NE(decoded.tensors[0].raw_data(), static_cast<void*>(storage + 1));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(decoded.tensors[0].raw_data()) % alignof(double), 0u);
  EXPECT_EQ(decoded.tensors[0].data<double>()[15], 15 * 1.25);
}

TEST(Wire, RejectsAHeaderThatDoesNotParse) {
  std::vector<zmq::message_t> frames;
  frames.emplace_back("\xff\xff\xff\xff\xff", 5);
  EXPECT_THAT(DecodeMessage(std::move(frames)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not an RpcHeader")));
  EXPECT_THAT(DecodeMessage({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no header frame")));
}

TEST(Wire, RejectsMissingAndExtraTensorFrames) {
  std::vector<zmq::message_t> frames =
      RoundTripFrames({Tensor::Scalar<float>(1), Tensor::Scalar<float>(2)});
  frames.pop_back();
  EXPECT_THAT(DecodeMessage(std::move(frames)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("header describes 2 tensors but the message has 1")));
  frames = RoundTripFrames({Tensor::Scalar<float>(1)});
  frames.emplace_back(4);
  EXPECT_THAT(DecodeMessage(std::move(frames)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("header describes 1 tensors but the message has 2")));
}

TEST(Wire, RejectsAFrameWhoseSizeDiffersFromTheHeader) {
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_FLOAT, {4}, 16), std::string(12, 'a'))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("frame 1 (tensor 0): 12 bytes, header says 16")));
}

TEST(Wire, RejectsBytesThatDoNotMatchTheShape) {
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_FLOAT, {2, 3}, 20), std::string(20, 'a'))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("frame 1 (tensor 0): 20 bytes, but shape [2,3] of float "
                                 "needs 6 elements of 4 bytes")));
}

TEST(Wire, RejectsNegativeAndOverflowingShapes) {
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_FLOAT, {-1}, 4), std::string(4, 'a'))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("frame 1 (tensor 0)")));
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_FLOAT, {int64_t{1} << 40, int64_t{1} << 40}, 4),
                                        std::string(4, 'a'))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("frame 1 (tensor 0)")));
  // Fits in int64 elements but not in bytes.
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_DOUBLE, {int64_t{1} << 62}, 0), "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs")));
}

TEST(Wire, RejectsDtypesThatCannotTravel) {
  for (DataType dtype : {DT_INVALID, DT_FLOAT_REF, static_cast<DataType>(999)}) {
    EXPECT_THAT(DecodeMessage(MessageWith(Meta(dtype, {1}, 4), std::string(4, 'a'))),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot travel")))
        << dtype;
  }
}

TEST(Wire, RejectsMalformedStringFrames) {
  const std::string two = LengthPrefixed("ab") + LengthPrefixed("c");
  EXPECT_OK(DecodeMessage(MessageWith(Meta(DT_STRING, {2}, two.size()), two)));
  const std::string cut = two.substr(0, two.size() - 3);
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_STRING, {2}, cut.size()), cut)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element 1")));
  const std::string trailing = two + "zz";
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_STRING, {2}, trailing.size()), trailing)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 trailing bytes")));
  std::string huge_length = two;
  huge_length[7] = '\x7f';
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_STRING, {2}, huge_length.size()), huge_length)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element 0: length")));
  // A shape with far more elements than the frame could describe is
  // refused before anything is allocated.
  EXPECT_THAT(DecodeMessage(MessageWith(Meta(DT_STRING, {int64_t{1} << 50}, two.size()), two)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("length prefixes")));
}

TEST(Wire, RejectsBoolBytesOtherThanZeroAndOne) {
  EXPECT_THAT(
      DecodeMessage(MessageWith(Meta(DT_BOOL, {3}, 3), std::string("\x01\x00\x02", 3))),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bool element 2 has byte value 2")));
}

TEST(Wire, EncodeRejectsAnUninitializedTensor) {
  RpcHeader header;
  EXPECT_THAT(EncodeTensors({Tensor::Scalar<float>(1), Tensor()}, &header),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor 1 is uninitialized")));
}

}  // namespace
}  // namespace rill
