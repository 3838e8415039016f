// The server's side of CurveZMQ (RFC 26) as an attacker sees it: a client
// written by hand does every step of the handshake right, then wrong, one
// step at a time. Each wrong step must end its connection (or be told
// ERROR) and leave the server serving its members.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/test_util.h"
#include "tests/transport/curve_client.h"
#include "tests/transport/raw_curve_peer.h"
#include "transport/curve.h"
#include "transport/rpc.h"
#include "transport/wire.h"
#include "transport/zmtp/curve_server.h"
#include "transport/zmtp/protocol.h"
#include "zmq_addon.hpp"

namespace rill {
namespace {

using ::rill::testing::CapturedLog;
using ::rill::testing::CurveClient;
using ::rill::testing::CurveKey;
using ::rill::testing::CurveKeyPair;
using ::rill::testing::kBoxCommand;
using ::rill::testing::kBoxMore;
using ::rill::testing::RawCurvePeer;
using ::testing::HasSubstr;
using ::testing::Not;

using Stop = RawCurvePeer::Stop;

constexpr absl::Duration kWait = absl::Seconds(10);

void Echo(RpcMessage request, RpcDone done) { done(absl::OkStatus(), std::move(request)); }

RpcHeader Request(uint64_t id) {
  RpcHeader header;
  header.set_method("echo");
  header.set_request_id(id);
  return header;
}

// A request whose one uint8 tensor is `bytes` long.
RpcHeader TensorRequest(uint64_t id, uint64_t bytes) {
  RpcHeader header = Request(id);
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_UINT8);
  meta->mutable_shape()->add_dim()->set_size(static_cast<int64_t>(bytes));
  meta->set_bytes(bytes);
  return header;
}

// Bytes that differ from their neighbours at every offset a frame could
// be cut or shifted by.
std::string Pattern(size_t bytes) {
  std::string data(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>((i * 131) ^ (i >> 9));
  return data;
}

class CurveHandshake : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq was built without CURVE";
    server_pair_ = CurveKeyPair::Random();
    client_pair_ = CurveKeyPair::Random();
    server_ = Start({});
    ASSERT_NE(server_, nullptr);
  }

  // The server's keys: its own pair (which its members share) and the
  // client's, authorized.
  std::shared_ptr<const CurveKeys> ServerKeys() const {
    auto keys = std::make_shared<CurveKeys>();
    keys->public_key = testing::Z85(server_pair_.public_key);
    keys->secret_key = testing::Z85(server_pair_.secret_key);
    keys->server_public_key = keys->public_key;
    keys->authorized = {keys->public_key, testing::Z85(client_pair_.public_key)};
    return keys;
  }

  std::unique_ptr<RpcServer> Start(const ConnectionLimitOptions& limits) {
    RpcServerOptions options;
    options.bind_address = "tcp://127.0.0.1:0";
    options.bind_ipc = false;
    options.curve = ServerKeys();
    options.limits = limits;
    options.log = log_.sink();
    absl::StatusOr<std::unique_ptr<RpcServer>> server =
        RpcServer::Start(options, {RpcMethod{.name = "echo", .handler = Echo}});
    EXPECT_OK(server);
    return server.ok() ? *std::move(server) : nullptr;
  }

  absl::StatusOr<std::unique_ptr<RawCurvePeer>> Connect(Stop stop = Stop::kHandshakeDone,
                                                        const std::string& local_address = "") {
    return RawCurvePeer::Connect(server_->port(), client_pair_, server_pair_.public_key,
                                 {.stop = stop, .local_address = local_address});
  }

  // A member's call through RpcClient (libzmq's CURVE).
  absl::Status MemberCall() {
    RpcClientOptions options;
    options.address = "127.0.0.1:" + std::to_string(server_->port());
    options.prefer_ipc = false;
    options.curve = ServerKeys();
    options.heartbeat_timeout = absl::Seconds(20);
    absl::StatusOr<std::unique_ptr<RpcClient>> client = RpcClient::Connect(options);
    if (!client.ok()) return client.status();
    return (*client)->CallSync("echo", {}, absl::Now() + absl::Seconds(20)).status();
  }

  // The server ends `peer`'s connection, logs `reason`, and serves its
  // members on.
  void ExpectEnded(RawCurvePeer& peer, const std::string& reason) {
    EXPECT_TRUE(peer.ClosedWithin(kWait)) << "the server kept a connection that " << reason;
    EXPECT_THAT(log_.Read(), HasSubstr(reason));
    EXPECT_OK(MemberCall());
  }

  CapturedLog log_;
  CurveKeyPair server_pair_;
  CurveKeyPair client_pair_;
  std::unique_ptr<RpcServer> server_;
};

TEST_F(CurveHandshake, AClientThatFollowsTheRfcIsServed) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  std::string message;
  EXPECT_EQ(peer->Call("echo", 1, &message), 0) << message;
  EXPECT_EQ(peer->Call("echo", 2, &message), 0) << message;
  EXPECT_EQ(peer->Call("missing", 3, &message), static_cast<int>(absl::StatusCode::kUnimplemented))
      << message;
  EXPECT_THAT(log_.Read(), Not(HasSubstr("closed connection")));
}

TEST_F(CurveHandshake, AClientFromAnotherSourceAddressIsServed) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kHandshakeDone, "127.0.0.2"));
  EXPECT_EQ(peer->Call("echo", 1), 0);
}

// Each handshake costs the server public-key crypto: a source that starts
// too many a second is turned away, and other sources are not.
TEST_F(CurveHandshake, ASourceOverItsHandshakeBudgetIsTurnedAwayAndOthersAreServed) {
  server_ = Start({.handshakes_per_source = 1});
  ASSERT_NE(server_, nullptr);
  // Two at once, then one a second: most of twenty in a row are refused.
  std::vector<std::unique_ptr<RawCurvePeer>> admitted;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::unique_ptr<RawCurvePeer>> peer = Connect(Stop::kAfterGreeting, "127.0.0.2");
    if (peer.ok()) admitted.push_back(*std::move(peer));
  }
  EXPECT_GE(admitted.size(), 1u);
  EXPECT_LT(admitted.size(), 20u);
  EXPECT_THAT(log_.Read(), HasSubstr("from 127.0.0.2: over 1 CURVE handshakes a second"));
  // Another source is served, and so are the connections let in.
  EXPECT_OK(MemberCall());
  for (auto& peer : admitted) {
    ASSERT_OK(peer->HelloWelcome());
    ASSERT_OK(peer->InitiateReady());
    EXPECT_EQ(peer->Call("echo", 1), 0);
  }
}

TEST_F(CurveHandshake, AHelloOfAnotherVersionEndsTheConnection) {
  for (const auto& [major, minor] : std::vector<std::pair<int, int>>{{2, 0}, {1, 1}, {0, 0}}) {
    ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterGreeting));
    ASSERT_TRUE(peer->SendCommand(peer->curve().Hello(
        {.major = static_cast<uint8_t>(major), .minor = static_cast<uint8_t>(minor)})));
    ExpectEnded(*peer, absl::StrFormat("version %d.%d", major, minor));
  }
}

TEST_F(CurveHandshake, AHelloOfAnotherSizeEndsTheConnection) {
  for (size_t padding : {size_t{71}, size_t{73}, size_t{0}}) {
    ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterGreeting));
    ASSERT_TRUE(peer->SendCommand(peer->curve().Hello({.padding = padding})));
    ExpectEnded(*peer, absl::StrFormat("got %d bytes", 128 + padding));
  }
  // Only its command name.
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterGreeting));
  ASSERT_TRUE(peer->SendCommand("\x05HELLO"));
  ExpectEnded(*peer, "got 6 bytes");
}

TEST_F(CurveHandshake, AHelloWhoseBoxDoesNotOpenEndsTheConnection) {
  // Boxed for another server's key.
  ASSERT_OK_AND_ASSIGN(auto stranger, Connect(Stop::kAfterGreeting));
  ASSERT_TRUE(stranger->SendCommand(
      stranger->curve().Hello({.box_for = CurveKeyPair::Random().public_key})));
  ExpectEnded(*stranger, "HELLO does not open");
  // A bit flipped in the box.
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterGreeting));
  std::string hello = peer->curve().Hello();
  hello[150] ^= 0x10;
  ASSERT_TRUE(peer->SendCommand(hello));
  EXPECT_TRUE(peer->ClosedWithin(kWait));
  EXPECT_OK(MemberCall());
}

TEST_F(CurveHandshake, ACookieFromAnotherConnectionEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto a, Connect(Stop::kAfterWelcome));
  ASSERT_OK_AND_ASSIGN(auto b, Connect(Stop::kAfterWelcome));
  ASSERT_NE(a->curve().cookie(), b->curve().cookie());
  ASSERT_TRUE(b->SendCommand(b->curve().Initiate({.cookie = a->curve().cookie()})));
  ExpectEnded(*b, "cookie");
  // The cookie's own connection completes its handshake.
  ASSERT_OK(a->InitiateReady());
  EXPECT_EQ(a->Call("echo", 1), 0);
}

TEST_F(CurveHandshake, AnInitiateWhoseNonceDoesNotGrowEndsTheConnection) {
  // The same nonce as HELLO's (1).
  ASSERT_OK_AND_ASSIGN(auto same, Connect(Stop::kAfterWelcome));
  ASSERT_TRUE(same->SendCommand(same->curve().Initiate({.nonce = 1})));
  ExpectEnded(*same, "INITIATE's nonce does not grow");
  // Less than HELLO's.
  ASSERT_OK_AND_ASSIGN(auto less, Connect(Stop::kAfterGreeting));
  ASSERT_TRUE(less->SendCommand(less->curve().Hello({.nonce = 10})));
  ASSERT_OK_AND_ASSIGN(const std::string welcome, less->ReadCommand(kWait));
  ASSERT_OK(less->curve().Welcome(welcome));
  ASSERT_TRUE(less->SendCommand(less->curve().Initiate({.nonce = 3})));
  EXPECT_TRUE(less->ClosedWithin(kWait));
  EXPECT_OK(MemberCall());
}

TEST_F(CurveHandshake, AMessageNonceUsedAgainEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  const uint64_t nonce = peer->curve().next_nonce();
  ASSERT_TRUE(peer->SendSealed(0, Request(1).SerializeAsString(), nonce));
  ASSERT_TRUE(peer->ReadReply(kWait).has_value());
  ASSERT_TRUE(peer->SendSealed(0, Request(2).SerializeAsString(), nonce));
  ExpectEnded(*peer, "nonce does not grow");
}

TEST_F(CurveHandshake, AMessageNonceThatDecreasesEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_TRUE(peer->SendSealed(0, Request(1).SerializeAsString(), 10));
  ASSERT_TRUE(peer->ReadReply(kWait).has_value());
  ASSERT_TRUE(peer->SendSealed(0, Request(2).SerializeAsString(), 5));
  ExpectEnded(*peer, "nonce does not grow");
}

TEST_F(CurveHandshake, AFirstMessageWithInitiatesNonceEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_EQ(peer->curve().next_nonce(), 3u);  // HELLO 1, INITIATE 2.
  ASSERT_TRUE(peer->SendSealed(0, Request(1).SerializeAsString(), 2));
  ExpectEnded(*peer, "nonce does not grow");
}

TEST_F(CurveHandshake, AVouchForAnotherServerKeyEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterWelcome));
  ASSERT_TRUE(peer->SendCommand(
      peer->curve().Initiate({.vouch_server_key = CurveKeyPair::Random().public_key})));
  ExpectEnded(*peer, "vouch");
}

TEST_F(CurveHandshake, AVouchForAnotherShortTermKeyEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterWelcome));
  ASSERT_TRUE(peer->SendCommand(
      peer->curve().Initiate({.vouch_short_key = CurveKeyPair::Random().public_key})));
  ExpectEnded(*peer, "vouch");
}

TEST_F(CurveHandshake, ASecondHelloEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterWelcome));
  ASSERT_TRUE(peer->SendCommand(peer->curve().Hello()));
  ExpectEnded(*peer, "a second HELLO");
}

TEST_F(CurveHandshake, AHelloAfterReadyEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_TRUE(peer->SendCommand(peer->curve().Hello()));
  EXPECT_TRUE(peer->ClosedWithin(kWait));
  EXPECT_OK(MemberCall());
}

TEST_F(CurveHandshake, AnInitiateBeforeHelloEndsTheConnection) {
  // A well-made INITIATE, from another connection's handshake.
  ASSERT_OK_AND_ASSIGN(auto other, Connect(Stop::kAfterWelcome));
  const std::string initiate = other->curve().Initiate();
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterGreeting));
  ASSERT_TRUE(peer->SendCommand(initiate));
  ExpectEnded(*peer, "INITIATE before HELLO");
}

TEST_F(CurveHandshake, AnotherCommandInTheHandshakeEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterGreeting));
  ASSERT_TRUE(peer->SendCommand(zmtp::CommandBody(
      "READY", zmtp::EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}}))));
  ExpectEnded(*peer, "in the CURVE handshake");
}

TEST_F(CurveHandshake, AMessageFrameBeforeTheHandshakeEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect(Stop::kAfterWelcome));
  ASSERT_TRUE(peer->SendFrame(0, Request(1).SerializeAsString()));
  ExpectEnded(*peer, "before the handshake ended");
}

TEST_F(CurveHandshake, APlaintextFrameAfterReadyEndsTheConnection) {
  // A request as long as a sealed one, and a shorter one.
  RpcHeader request = Request(1);
  request.set_body(std::string(100, 'x'));
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_TRUE(peer->SendFrame(0, request.SerializeAsString()));
  ExpectEnded(*peer, "is not a MESSAGE");
  ASSERT_OK_AND_ASSIGN(auto shorter, Connect());
  ASSERT_TRUE(shorter->SendFrame(0, Request(1).SerializeAsString()));
  EXPECT_TRUE(shorter->ClosedWithin(kWait));
  EXPECT_OK(MemberCall());
  // A plaintext heartbeat too: after READY every command is sealed.
  ASSERT_OK_AND_ASSIGN(auto pinger, Connect());
  ASSERT_TRUE(pinger->SendCommand(zmtp::CommandBody("PING", std::string(2, '\0'))));
  EXPECT_TRUE(pinger->ClosedWithin(kWait));
  EXPECT_OK(MemberCall());
}

TEST_F(CurveHandshake, AMessageWhoseBoxDoesNotOpenEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  std::string sealed = peer->curve().Seal(0, Request(1).SerializeAsString());
  sealed.back() ^= 0x01;
  ASSERT_TRUE(peer->SendFrame(0, sealed));
  ExpectEnded(*peer, "does not open");
  // Too short to hold a box.
  ASSERT_OK_AND_ASSIGN(auto shorter, Connect());
  ASSERT_TRUE(shorter->SendFrame(0, shorter->curve().Seal(0, "").substr(0, 20)));
  EXPECT_TRUE(shorter->ClosedWithin(kWait));
  EXPECT_OK(MemberCall());
}

TEST_F(CurveHandshake, AnUnauthorizedClientIsToldError400) {
  const CurveKeyPair stranger = CurveKeyPair::Random();
  ASSERT_OK_AND_ASSIGN(auto peer,
                       RawCurvePeer::Connect(server_->port(), stranger, server_pair_.public_key,
                                             {.stop = Stop::kAfterWelcome}));
  ASSERT_TRUE(peer->SendCommand(peer->curve().Initiate()));
  ASSERT_OK_AND_ASSIGN(const std::string error, peer->ReadCommand(kWait));
  EXPECT_EQ(error, zmtp::ErrorBody("400"));
  ExpectEnded(*peer, "not in the server's authorized_keys");
}

// Sealed frames at and around the sizes where the server stops staging a
// frame and reads it straight into its memory (32 KiB) and where its
// staging buffer ends (64 KiB).
TEST_F(CurveHandshake, LargeSealedTensorsArriveWhole) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  constexpr size_t kBox = zmtp::CurveServer::kMessageOverhead;
  uint64_t id = 0;
  for (size_t bytes :
       {size_t{32} << 10, (size_t{32} << 10) - kBox, (size_t{32} << 10) - kBox + 1,
        (size_t{32} << 10) + 1, size_t{64} << 10, (size_t{64} << 10) - kBox, size_t{1} << 20}) {
    SCOPED_TRACE(absl::StrFormat("a tensor of %d bytes", bytes));
    const std::string data = Pattern(bytes);
    ASSERT_TRUE(peer->SendRequest(TensorRequest(++id, bytes), {data}));
    std::optional<RawCurvePeer::Reply> reply = peer->ReadReply(kWait);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->header.request_id(), id);
    EXPECT_EQ(reply->header.status_code(), 0) << reply->header.status_message();
    ASSERT_EQ(reply->frames.size(), 1u);
    ASSERT_EQ(reply->header.tensors_size(), 1);
    EXPECT_EQ(reply->header.tensors(0).bytes(), bytes);
    EXPECT_TRUE(reply->frames[0] == data) << "the echoed tensor differs";
  }
  // Three at once, in one message.
  const std::vector<std::string> frames = {Pattern(40000), Pattern(70000), Pattern(100)};
  RpcHeader header = TensorRequest(++id, 40000);
  for (size_t bytes : {size_t{70000}, size_t{100}}) {
    *header.add_tensors() = TensorRequest(0, bytes).tensors(0);
  }
  ASSERT_TRUE(peer->SendRequest(header, frames));
  std::optional<RawCurvePeer::Reply> reply = peer->ReadReply(kWait);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.status_code(), 0) << reply->header.status_message();
  EXPECT_TRUE(reply->frames == frames);
  EXPECT_THAT(log_.Read(), Not(HasSubstr("closed connection")));
}

TEST_F(CurveHandshake, ALargeSealedFrameOfAnotherSizeThanDeclaredEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_TRUE(peer->SendRequest(TensorRequest(1, 64 << 10), {Pattern((64 << 10) + 1)}));
  ExpectEnded(*peer, "its header declares 65536 bytes of data");
}

TEST_F(CurveHandshake, ALargeSealedFrameWhoseBoxDoesNotOpenEndsTheConnection) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_TRUE(peer->SendSealed(kBoxMore, TensorRequest(1, 1 << 20).SerializeAsString()));
  std::string sealed = peer->curve().Seal(0, Pattern(1 << 20));
  sealed[sealed.size() / 2] ^= 0x40;
  ASSERT_TRUE(peer->SendFrame(0, sealed));
  ExpectEnded(*peer, "does not open");
}

TEST_F(CurveHandshake, ASealedTensorPastTheConnectionsLimitIsRefusedAndTheConnectionServesOn) {
  server_ = Start({.max_bytes_per_connection = 256 << 10});
  ASSERT_NE(server_, nullptr);
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  ASSERT_TRUE(peer->SendRequest(TensorRequest(1, 1 << 20), {Pattern(1 << 20)}));
  std::optional<RawCurvePeer::Reply> reply = peer->ReadReply(kWait);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.status_code(), static_cast<int>(absl::StatusCode::kResourceExhausted))
      << reply->header.status_message();
  EXPECT_EQ(peer->Call("echo", 2), 0);
}

TEST_F(CurveHandshake, ASealedHeaderPastTheConnectionsLimitEndsTheConnection) {
  server_ = Start({.max_bytes_per_connection = 256 << 10});
  ASSERT_NE(server_, nullptr);
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  RpcHeader header = Request(1);
  header.set_body(Pattern(300 << 10));
  ASSERT_TRUE(peer->SendSealed(0, header.SerializeAsString()));
  ExpectEnded(*peer, "header frame");
}

// ZMTP 3.1's heartbeat under CURVE, as libzmq sends it: a PING command
// sealed in a MESSAGE whose box flags say COMMAND (0x02).
TEST_F(CurveHandshake, ASealedPingIsAnsweredWithASealedPong) {
  ASSERT_OK_AND_ASSIGN(auto peer, Connect());
  for (const std::string context : {"", "ctx", "sixteen-bytes-ok"}) {
    // A TTL of 10 (deciseconds), then the context.
    ASSERT_TRUE(peer->SendSealed(kBoxCommand,
                                 zmtp::CommandBody("PING", std::string("\x00\x0a", 2) + context)));
    absl::StatusOr<testing::CurveClient::Opened> pong = peer->ReadSealed(kWait);
    ASSERT_OK(pong);
    EXPECT_EQ(pong->flags, kBoxCommand);
    EXPECT_EQ(pong->data, zmtp::CommandBody("PONG", context));
  }
  EXPECT_EQ(peer->Call("echo", 1), 0);
  EXPECT_THAT(log_.Read(), Not(HasSubstr("closed connection")));
}

TEST_F(CurveHandshake, BoxFlagsWithReservedBitsEndTheConnection) {
  for (uint8_t flags : {uint8_t{0x04}, uint8_t{0x10}, uint8_t{0x80}, uint8_t{0x81}}) {
    SCOPED_TRACE(absl::StrFormat("box flags 0x%02x", flags));
    ASSERT_OK_AND_ASSIGN(auto peer, Connect());
    ASSERT_TRUE(peer->SendSealed(flags, Request(1).SerializeAsString()));
    EXPECT_TRUE(peer->ClosedWithin(kWait));
    EXPECT_OK(MemberCall());
  }
}

// libzmq's own CURVE client, heartbeating every 100 ms: its PINGs are
// sealed commands, which the server must answer rather than take for a
// malformed request.
TEST_F(CurveHandshake, ALibzmqDealerWithHeartbeatsStaysConnected) {
  CurveKeys keys;
  keys.public_key = testing::Z85(client_pair_.public_key);
  keys.secret_key = testing::Z85(client_pair_.secret_key);
  keys.server_public_key = testing::Z85(server_pair_.public_key);
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::heartbeat_ivl, 100);
  dealer.set(zmq::sockopt::heartbeat_timeout, 2000);
  dealer.set(zmq::sockopt::rcvtimeo, 10000);
  UseCurveAsClient(dealer, keys);
  dealer.connect("tcp://127.0.0.1:" + std::to_string(server_->port()));
  // Calls spread over two seconds: twenty heartbeats in between.
  const absl::Time end = absl::Now() + absl::Seconds(2);
  for (uint64_t id = 1; absl::Now() < end; ++id) {
    std::vector<zmq::message_t> request;
    request.push_back(EncodeHeader(Request(id)));
    ASSERT_TRUE(zmq::send_multipart(dealer, request).has_value());
    std::vector<zmq::message_t> reply;
    ASSERT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(reply)).has_value())
        << "no reply to call " << id;
    ASSERT_OK_AND_ASSIGN(const RpcHeader header, DecodeHeader(reply.at(0)));
    EXPECT_EQ(header.request_id(), id);
    EXPECT_EQ(header.status_code(), 0) << header.status_message();
    absl::SleepFor(absl::Milliseconds(150));
  }
  EXPECT_THAT(log_.Read(), Not(HasSubstr("closed connection")));
}

}  // namespace
}  // namespace rill
