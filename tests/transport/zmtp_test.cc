#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/allocator.h"
#include "graph/status_macros.h"
#include "tests/test_util.h"
#include "transport/connection_limits.h"
#include "transport/wire.h"
#include "transport/zmtp/header_census.h"
#include "transport/zmtp/protocol.h"
#include "transport/zmtp/server_reader.h"

namespace rill::zmtp {
namespace {

using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Protocol, FrameHeadersAreShortUpTo255Bytes) {
  uint8_t header[kLongHeaderBytes];
  ASSERT_EQ(EncodeFrameHeader(kMore, 255, header), kShortHeaderBytes);
  EXPECT_EQ(header[0], kMore);
  EXPECT_EQ(header[1], 255);
  ASSERT_EQ(EncodeFrameHeader(0, 256, header), kLongHeaderBytes);
  EXPECT_EQ(header[0], kLong);
  EXPECT_EQ(ReadBigEndian64(header + 1), 256u);
}

TEST(Protocol, PropertiesRoundTripAndOverrunsAreNamed) {
  const std::string bytes = EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}});
  ASSERT_OK_AND_ASSIGN(auto properties, ParseProperties(bytes));
  EXPECT_EQ(properties["Socket-Type"], "DEALER");
  EXPECT_OK(CheckPeerSocketType(properties));
  const std::string type = EncodeProperties({{"Socket-Type", "DEALER"}});
  EXPECT_THAT(ParseProperties(type.substr(0, type.size() - 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'Socket-Type' has a value of 6 bytes, past the end")));
  EXPECT_THAT(ParseProperties(bytes.substr(0, bytes.size() - 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("property at byte 22 runs past the end")));
  EXPECT_THAT(CheckPeerSocketType({{"Socket-Type", "PUB"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ZeroMQ PUB socket")));
}

TEST(Protocol, GreetingsAreChecked) {
  const std::string null = ServerGreeting(Mechanism::kNull);
  ASSERT_EQ(null.size(), kGreetingBytes);
  EXPECT_OK(CheckGreeting(null, Mechanism::kNull));
  EXPECT_THAT(CheckGreeting(null, Mechanism::kCurve),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'NULL'")));
  std::string old = null;
  old[10] = 2;
  EXPECT_THAT(CheckGreeting(old, Mechanism::kNull),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("speaks ZMTP 2")));
  EXPECT_THAT(CheckGreeting(std::string(64, 'G'), Mechanism::kNull),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("signature")));
}

std::string Frame(uint8_t flags, std::string_view body) {
  uint8_t header[kLongHeaderBytes];
  const size_t length = EncodeFrameHeader(flags, body.size(), header);
  return std::string(reinterpret_cast<const char*>(header), length) + std::string(body);
}

// What a DEALER sends before its first message.
std::string ClientHandshake() {
  return ServerGreeting(Mechanism::kNull) +
         Frame(
             kCommand,
             CommandBody("READY", EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}})));
}

std::string Request(const std::string& method, uint64_t id, const std::vector<Tensor>& tensors) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(id);
  absl::StatusOr<std::vector<zmq::message_t>> frames = EncodeMessage(header, tensors);
  EXPECT_OK(frames);
  std::string bytes;
  for (size_t i = 0; i < frames->size(); ++i) {
    bytes += Frame(i + 1 < frames->size() ? kMore : 0, (*frames)[i].to_string_view());
  }
  return bytes;
}

class Recorder : public ServerReader::Sink {
 public:
  void SendHandshake(std::string bytes) override { sent += bytes; }
  void HandshakeDone() override { ready = true; }
  void Message(ReceivedMessage message) override { messages.push_back(std::move(message)); }
  void Refused(const RpcHeader& header, absl::Status why) override {
    refused.emplace_back(header.method(), std::move(why));
  }
  std::string sent;
  bool ready = false;
  std::vector<ReceivedMessage> messages;
  std::vector<std::pair<std::string, absl::Status>> refused;
};

// Feeds `bytes` to `reader` in pieces of at most `piece` bytes, as recv
// would; stops at the first error.
absl::Status FeedReader(ServerReader& reader, std::string_view bytes, size_t piece = 1 << 20) {
  while (!bytes.empty()) {
    const std::span<uint8_t> buffer = reader.Buffer();
    const size_t n = std::min({bytes.size(), buffer.size(), piece});
    std::memcpy(buffer.data(), bytes.data(), n);
    bytes.remove_prefix(n);
    RETURN_IF_ERROR(reader.Received(n));
  }
  return absl::OkStatus();
}

class ReaderTest : public ::testing::Test {
 protected:
  explicit ReaderTest(ConnectionLimitOptions limits = {.max_bytes_per_connection = 1 << 20})
      : server_(ServerLoad::Create(limits, 7, testing::QuietLog())),
        load_(server_->Connect("peer")),
        reader_(nullptr, load_, &sink_) {}

  absl::Status Feed(std::string_view bytes, size_t piece = 1 << 20) {
    return FeedReader(reader_, bytes, piece);
  }

  std::shared_ptr<ServerLoad> server_;
  std::shared_ptr<ConnectionLoad> load_;
  Recorder sink_;
  ServerReader reader_;
};

TEST_F(ReaderTest, AnswersTheGreetingAndReadyAsARouter) {
  EXPECT_EQ(sink_.sent, ServerGreeting(Mechanism::kNull));  // At once.
  ASSERT_OK(Feed(ClientHandshake(), 7));
  EXPECT_TRUE(sink_.ready);
  EXPECT_THAT(sink_.sent, HasSubstr("Socket-Type"));
  EXPECT_THAT(sink_.sent, HasSubstr("ROUTER"));
  EXPECT_FALSE(reader_.mid_message());
}

TEST_F(ReaderTest, DeliversMessagesWholeWhateverTheyArriveIn) {
  const Tensor large = testing::RandomTensor(TensorShape({100, 1000}), 1);  // Read directly.
  const Tensor small = Tensor::Scalar<int32_t>(7);
  const std::string stream = ClientHandshake() + Request("Push", 1, {large, small}) +
                             Request("Ping", 2, {}) + Request("Push", 3, {small});
  for (size_t piece : {size_t{1}, size_t{3}, size_t{1000}, size_t{1} << 20}) {
    SCOPED_TRACE(piece);
    Recorder sink;
    ServerReader reader(nullptr, load_, &sink);
    ASSERT_OK(FeedReader(reader, stream, piece));
    ASSERT_EQ(sink.messages.size(), 3u);
    EXPECT_EQ(sink.messages[0].header.method(), "Push");
    ASSERT_EQ(sink.messages[0].tensor_frames.size(), 2u);
    const zmq::message_t& frame = sink.messages[0].tensor_frames[0];
    EXPECT_EQ(reinterpret_cast<uintptr_t>(frame.data()) % kTensorAlignment, 0u);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> tensors,
                         DecodeTensors(sink.messages[0].header, sink.messages[0].tensor_frames, 0));
    EXPECT_EQ(testing::Values<float>(tensors[0]), testing::Values<float>(large));
    EXPECT_EQ(testing::Values<int32_t>(tensors[1]), std::vector<int32_t>{7});
    EXPECT_EQ(sink.messages[1].header.request_id(), 2u);
    EXPECT_TRUE(sink.messages[1].tensor_frames.empty());
    EXPECT_EQ(sink.messages[2].tensor_frames.size(), 1u);
    // Each holds its bytes until it is let go.
    EXPECT_GT(load_->bytes(), static_cast<int64_t>(large.TotalBytes()));
    sink.messages.clear();
    EXPECT_EQ(load_->bytes(), 0);
  }
}

TEST_F(ReaderTest, UndeclaredFramesAreDroppedRefusedAndPastAFewEndTheConnection) {
  ASSERT_OK(Feed(ClientHandshake()));
  RpcHeader header;
  header.set_method("Push");
  header.set_request_id(3);
  // A header that declares no tensor, then two frames: read, not kept.
  ASSERT_OK(Feed(Frame(kMore, header.SerializeAsString()) + Frame(kMore, "") +
                 Frame(0, std::string(100000, 'x')) + Request("Ping", 4, {})));
  ASSERT_EQ(sink_.refused.size(), 1u);
  EXPECT_THAT(sink_.refused[0].second,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("declares 0 tensors and more frames follow")));
  ASSERT_EQ(sink_.messages.size(), 1u);  // The connection goes on.
  EXPECT_EQ(load_->bytes(), sink_.messages[0].ticket.bytes());
  // Millions of empty frames: the connection ends a few frames in, holding
  // nothing.
  const uint64_t flood_start = ClientHandshake().size() + Request("Ping", 4, {}).size();
  std::string flood = Frame(kMore, header.SerializeAsString());
  for (int i = 0; i < 1000; ++i) flood += Frame(kMore, "");
  Recorder sink;
  absl::Status status;
  {
    ServerReader reader(nullptr, load_, &sink);
    status = FeedReader(reader, ClientHandshake() + Request("Ping", 4, {}) + flood);
  }  // The connection closes: what its reader held goes back.
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("more than 64 frames past the 0 tensors")));
  const uint64_t frame_65 = flood_start + header.SerializeAsString().size() + 2 + 64 * 2;
  EXPECT_THAT(status.message(), HasSubstr(absl::StrFormat("byte %d:", frame_65)));
  sink_.messages.clear();
  sink.messages.clear();
  EXPECT_EQ(load_->bytes(), 0);
}

TEST_F(ReaderTest, FramesOfAnotherSizeOrCountThanDeclaredAreRefused) {
  ASSERT_OK(Feed(ClientHandshake()));
  RpcHeader header;
  header.set_method("Push");
  header.set_request_id(1);
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_FLOAT);
  meta->set_bytes(8);
  ASSERT_OK(Feed(Frame(kMore, header.SerializeAsString()) + Frame(0, std::string(4096, 'x'))));
  ASSERT_OK(Feed(Frame(0, header.SerializeAsString())));  // Its tensor never comes.
  ASSERT_EQ(sink_.refused.size(), 2u);
  EXPECT_THAT(sink_.refused[0].second,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("frame 1 (tensor 0) of a 'Push' request has 4096 bytes; its "
                                 "header declares 8")));
  EXPECT_THAT(sink_.refused[1].second,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("declares 1 tensors but 0 frames follow it")));
  EXPECT_TRUE(sink_.messages.empty());
  EXPECT_EQ(load_->bytes(), 0);
}

TEST_F(ReaderTest, AMessageOverTheLimitsIsReadWithoutBeingKeptAndRefused) {
  ASSERT_OK(Feed(ClientHandshake()));
  RpcHeader header;
  header.set_method("Push");
  header.set_request_id(5);
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_UINT8);
  meta->set_bytes(4 << 20);  // Past the 1 MiB per connection.
  const std::string big(4 << 20, 'x');
  ASSERT_OK(Feed(Frame(kMore, header.SerializeAsString()) + Frame(0, big) + Request("Ping", 6, {}),
                 100000));
  ASSERT_EQ(sink_.refused.size(), 1u);
  EXPECT_EQ(sink_.refused[0].first, "Push");
  EXPECT_THAT(sink_.refused[0].second, StatusIs(absl::StatusCode::kResourceExhausted,
                                                HasSubstr("max_bytes_per_connection")));
  ASSERT_EQ(sink_.messages.size(), 1u);  // The connection goes on.
  EXPECT_EQ(sink_.messages[0].header.method(), "Ping");
}

TEST_F(ReaderTest, ATensorOverTheProcessesLimitIsRefused) {
  const std::string request = Request("Push", 1, {Tensor(DT_FLOAT, TensorShape({300}))});
  testing::ScopedMaxTensorBytes limit(1000);
  ASSERT_OK(Feed(ClientHandshake()));
  ASSERT_OK(Feed(request));
  ASSERT_EQ(sink_.refused.size(), 1u);
  EXPECT_THAT(sink_.refused[0].second,
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_tensor_bytes")));
}

TEST_F(ReaderTest, AHeaderOverTheConnectionsLimitIsRefusedByItsRequestId) {
  ASSERT_OK(Feed(ClientHandshake()));
  RpcHeader header;
  header.set_method("RegisterGraph");
  header.set_request_id(9);
  header.set_body(std::string(2 << 20, 'b'));
  ASSERT_OK(Feed(Frame(0, header.SerializeAsString()), 4096));
  ASSERT_EQ(sink_.refused.size(), 1u);
  EXPECT_EQ(sink_.refused[0].first, "RegisterGraph");
  EXPECT_THAT(sink_.refused[0].second,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr(absl::StrFormat("a request whose header has %d bytes",
                                                 header.ByteSizeLong()))));
  // A frame that is no header at all is dropped without a word.
  ASSERT_OK(Feed(Frame(0, std::string(2 << 20, 'h')) + Frame(0, "\xff\xff")));
  EXPECT_EQ(sink_.refused.size(), 1u);
  EXPECT_TRUE(sink_.messages.empty());
  EXPECT_EQ(load_->bytes(), 0);
}

TEST_F(ReaderTest, HandshakeViolationsAreNamed) {
  EXPECT_THAT(Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, ' ')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte 0")));
  Recorder sink;
  ServerReader reader(nullptr, load_, &sink);
  EXPECT_THAT(FeedReader(reader, ServerGreeting(Mechanism::kNull) + Frame(0, "data before READY")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a message frame before the handshake ended")));
}

TEST_F(ReaderTest, PingIsAnsweredPong) {
  ASSERT_OK(Feed(ClientHandshake()));
  sink_.sent.clear();
  ASSERT_OK(Feed(Frame(kCommand, CommandBody("PING", std::string("\0\x0a", 2) + "ctx"))));
  EXPECT_EQ(sink_.sent, Frame(kCommand, CommandBody("PONG", "ctx")));
}

// A header that declares `tensors` TensorMeta entries without a byte of
// content: two bytes each on the wire.
std::string HeaderOfEmptyTensors(const std::string& method, uint64_t id, int64_t tensors) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(id);
  std::string bytes = header.SerializeAsString();
  bytes.reserve(bytes.size() + 2 * static_cast<size_t>(tensors));
  for (int64_t i = 0; i < tensors; ++i) bytes.append("\x3a\x00", 2);
  return bytes;
}

TEST(HeaderCensus, CountsWhatAParseWouldMakeAndBoundsItsMemory) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    RpcHeader header;
    header.set_method("RunGraph");
    header.set_request_id(trial + 1);
    header.set_body(std::string(random() % 100, 'b'));
    const int tensors = static_cast<int>(random() % 40);
    int64_t dims = 0;
    for (int i = 0; i < tensors; ++i) {
      TensorMeta* meta = header.add_tensors();
      meta->set_bytes(random() % 1000);
      const int rank = static_cast<int>(random() % 8);
      for (int d = 0; d < rank; ++d) meta->mutable_shape()->add_dim()->set_size(random() % 5);
      dims += rank;
    }
    const std::string bytes = header.SerializeAsString();
    const HeaderCensus census = CountHeader(bytes);
    ASSERT_TRUE(census.well_formed);
    EXPECT_EQ(census.method, "RunGraph");
    EXPECT_EQ(census.request_id, static_cast<uint64_t>(trial + 1));
    EXPECT_EQ(census.tensors, tensors);
    EXPECT_EQ(census.dims, dims);
    RpcHeader parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    EXPECT_LE(static_cast<int64_t>(parsed.SpaceUsedLong()),
              static_cast<int64_t>(sizeof(RpcHeader) + bytes.size()) + census.ParsedBytes());
  }
  // The cheapest entries on the wire are the costliest once parsed.
  const std::string empty = HeaderOfEmptyTensors("m", 1, 1000);
  RpcHeader parsed;
  ASSERT_TRUE(parsed.ParseFromString(empty));
  EXPECT_LE(static_cast<int64_t>(parsed.SpaceUsedLong()),
            static_cast<int64_t>(sizeof(RpcHeader)) + CountHeader(empty).ParsedBytes());
  EXPECT_FALSE(CountHeader("\xff\xff\xff").well_formed);
  EXPECT_FALSE(CountHeader(std::string("\x3a\x05\x00", 3)).well_formed);  // Runs past the end.
}

// Room for a header of tens of megabytes.
class LargeReaderTest : public ReaderTest {
 protected:
  LargeReaderTest() : ReaderTest({.max_bytes_per_connection = 256 << 20}) {}
};

TEST_F(LargeReaderTest, AHeaderDeclaringMillionsOfTensorsIsRefusedUnparsed) {
  ASSERT_OK(Feed(ClientHandshake()));
  // Ten million entries, 20 MB: parsed, they would take more than a GB.
  const std::string header = HeaderOfEmptyTensors("Push", 11, 10'000'000);
  ASSERT_OK(Feed(Frame(0, header)));
  ASSERT_EQ(sink_.refused.size(), 1u);
  EXPECT_EQ(sink_.refused[0].first, "Push");
  EXPECT_THAT(sink_.refused[0].second,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("declares 10000000 tensors, more than the 65536 one message may "
                                 "(max_tensors_per_message)")));
  EXPECT_EQ(load_->bytes(), 0);
  // With its frames: read and dropped, the connection goes on.
  std::string frames = Frame(kMore, HeaderOfEmptyTensors("Push", 12, 100'000));
  for (int i = 0; i < 100'000; ++i) frames += Frame(i + 1 < 100'000 ? kMore : 0, "");
  ASSERT_OK(Feed(frames + Request("Ping", 13, {})));
  ASSERT_EQ(sink_.refused.size(), 2u);
  ASSERT_EQ(sink_.messages.size(), 1u);
  EXPECT_EQ(sink_.messages[0].header.request_id(), 13u);
}

TEST_F(ReaderTest, ShapesOfTooManyDimensionsAreRefused) {
  ASSERT_OK(Feed(ClientHandshake()));
  RpcHeader header;
  header.set_method("Push");
  header.set_request_id(1);
  TensorMeta* meta = header.add_tensors();
  for (int d = 0; d < 300; ++d) meta->mutable_shape()->add_dim()->set_size(1);
  meta->set_bytes(4);
  ASSERT_OK(Feed(Frame(kMore, header.SerializeAsString()) + Frame(0, "abcd")));
  ASSERT_EQ(sink_.refused.size(), 1u);
  EXPECT_THAT(sink_.refused[0].second,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a tensor of 300 dimensions, more than the 254")));
}

TEST_F(ReaderTest, RefusalsAreWordedOnceAndNamePeerTextCutAndEscaped) {
  ASSERT_OK(Feed(ClientHandshake()));
  // A 256 KiB method and 1,000 tensors of 2^64 - 1 bytes each: one
  // refusal, worded once, saying the method in at most a few hundred bytes.
  RpcHeader header;
  header.set_method(std::string(256 << 10, '\xff'));
  header.set_request_id(3);
  for (int i = 0; i < 1'000; ++i) header.add_tensors()->set_bytes(UINT64_MAX);
  ASSERT_OK(Feed(Frame(0, header.SerializeAsString())));
  ASSERT_EQ(sink_.refused.size(), 1u);
  const absl::Status& why = sink_.refused[0].second;
  EXPECT_THAT(why, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_tensor_bytes")));
  EXPECT_THAT(why.message(), HasSubstr("\\xff\\xff"));
  EXPECT_THAT(why.message(), HasSubstr("... (262144 bytes)"));
  EXPECT_LT(why.message().size(), 1000u);
  EXPECT_EQ(load_->bytes(), 0);
}

TEST_F(ReaderTest, AMethodOfInvalidUtf8IsDeliveredAsBytes) {
  ASSERT_OK(Feed(ClientHandshake() + Request("\xc3\x28", 4, {})));
  ASSERT_EQ(sink_.messages.size(), 1u);
  EXPECT_EQ(sink_.messages[0].header.method(), "\xc3\x28");
}

TEST_F(ReaderTest, AnErrorsReasonIsItsLengthByteLongAndCut) {
  std::string reason(65'528, 'r');
  reason[0] = 5;  // "rrrrr": the rest is not the reason.
  EXPECT_THAT(Feed(ServerGreeting(Mechanism::kNull) + Frame(kCommand, CommandBody("ERROR", reason))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ERROR 'rrrrr'")));
  Recorder sink;
  ServerReader reader(nullptr, load_, &sink);
  reason[0] = static_cast<char>(255);
  const absl::Status status = FeedReader(
      reader, ServerGreeting(Mechanism::kNull) + Frame(kCommand, CommandBody("ERROR", reason)));
  EXPECT_THAT(status.message(), HasSubstr("... (255 bytes)"));
  EXPECT_LT(status.message().size(), 300u);
}

TEST_F(ReaderTest, ReservedFrameFlagsEndTheConnection) {
  ASSERT_OK(Feed(ClientHandshake()));
  EXPECT_THAT(Feed(Frame(0x20, "x")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reserved bits")));
}

}  // namespace
}  // namespace rill::zmtp
