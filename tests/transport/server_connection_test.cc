// What one server connection queues for a peer that does not read: at most
// one PONG, a cap past which its input waits, a call's ticket held until
// its reply is written, and the time its output last moved.
#include "transport/server_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "transport/connection_limits.h"
#include "transport/zmtp/protocol.h"

namespace rill {
namespace {

// A connection over one end of a socket pair whose other end the test
// reads, or leaves unread.
class ServerConnectionTest : public ::testing::Test {
 protected:
  ServerConnectionTest() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    const int small = 4096;  // The kernel doubles it; either way a few KiB.
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    peer_ = fds[1];
    events_.message = [](uint64_t, zmtp::ReceivedMessage) {};
    events_.refused = [](uint64_t, const RpcHeader&, absl::Status, ConnectionLoad::Ticket) {};
    events_.handshake_done = [](uint64_t) {};
    events_.watch = [this](uint64_t, int, bool input, bool output) {
      watching_input_ = input;
      watching_output_ = output;
    };
    server_ = ServerLoad::Create({.max_output_bytes = 64 << 10}, 7, testing::QuietLog());
    load_ = server_->Connect("peer");
    connection_ = std::make_unique<ServerConnection>(fds[0], 1, "peer", true, 0, load_, nullptr,
                                                     &events_);
  }
  ~ServerConnectionTest() override {
    connection_.reset();
    close(peer_);
  }

  // A call's ticket, admitted as the server admits one.
  ConnectionLoad::Ticket Call(int64_t bytes) {
    absl::StatusOr<ConnectionLoad::Ticket> message = load_->Reserve(bytes);
    EXPECT_OK(message);
    return load_->AdmitCall(*std::move(message)).ticket;
  }

  std::vector<zmq::message_t> Reply(size_t bytes) {
    std::vector<zmq::message_t> frames;
    frames.emplace_back(std::string(bytes, 'r'));
    return frames;
  }

  // Reads everything the connection wrote so far.
  size_t Drain() {
    size_t total = 0;
    char buffer[65536];
    for (;;) {
      const ssize_t n = recv(peer_, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) return total;
      total += static_cast<size_t>(n);
    }
  }

  int peer_ = -1;
  std::vector<ConnectionLoad::Ticket> held_;
  bool watching_input_ = true;
  bool watching_output_ = false;
  ConnectionEvents events_;
  std::shared_ptr<ServerLoad> server_;
  std::shared_ptr<ConnectionLoad> load_;
  std::unique_ptr<ServerConnection> connection_;
};

TEST_F(ServerConnectionTest, APeerThatNeverReadsGetsOnePongQueued) {
  connection_->Send(Reply(1 << 20), Call(10));  // Fills every buffer.
  ASSERT_TRUE(connection_->has_output());
  const int64_t queued = connection_->peak_output_bytes();
  for (int i = 0; i < 100'000; ++i) connection_->Pong("context");
  EXPECT_LT(connection_->peak_output_bytes(), queued + 100);
  Drain();
}

TEST_F(ServerConnectionTest, ASmallReplyBehindAPongKeepsItsCallUntilWritten) {
  connection_->Send(Reply(1 << 20), Call(10));
  connection_->Pong("context");
  // Once merged into the PONG's chunk, this reply's ticket went back at
  // once, and the call cap no longer held.
  connection_->Send(Reply(16), Call(10));
  EXPECT_EQ(load_->calls(), 2);
  while (connection_->has_output()) {
    Drain();
    connection_->Flush();
  }
  EXPECT_EQ(load_->calls(), 0);
  EXPECT_EQ(load_->bytes(), 0);
}

TEST_F(ServerConnectionTest, InputWaitsWhileOutputIsOverItsCapAndResumesOnceRead) {
  EXPECT_FALSE(connection_->reading_paused());
  EXPECT_EQ(connection_->output_stalled_since(), absl::InfiniteFuture());
  connection_->Send(Reply(1 << 20), Call(10));
  EXPECT_TRUE(connection_->reading_paused());
  EXPECT_FALSE(watching_input_);
  EXPECT_TRUE(watching_output_);
  EXPECT_LE(connection_->output_stalled_since(), absl::Now());
  while (connection_->has_output()) {
    Drain();
    connection_->Flush();
  }
  EXPECT_FALSE(connection_->reading_paused());
  EXPECT_TRUE(watching_input_);
  EXPECT_FALSE(watching_output_);
  EXPECT_EQ(connection_->output_stalled_since(), absl::InfiniteFuture());
}

TEST_F(ServerConnectionTest, RefusalsPastAFewUnreadAreDroppedUnanswered) {
  int answered = 0;
  events_.refused = [&](uint64_t, const RpcHeader&, absl::Status, ConnectionLoad::Ticket ticket) {
    if (ticket) ++answered;
    // Held as a queued reply would hold it: never written.
    held_.push_back(std::move(ticket));
  };
  // `00 04 10 01 3A 00`: a header declaring one tensor, then no frame.
  std::string stream = zmtp::ServerGreeting(zmtp::Mechanism::kNull);
  const std::string ready = zmtp::CommandBody(
      "READY", zmtp::EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}}));
  stream += std::string{zmtp::kCommand, static_cast<char>(ready.size())} + ready;
  for (int i = 0; i < 1000; ++i) stream += std::string("\x00\x04\x10\x01\x3a\x00", 6);
  ASSERT_EQ(send(peer_, stream.data(), stream.size(), 0), static_cast<ssize_t>(stream.size()));
  bool more = false;
  do {
    ASSERT_OK(connection_->Read(1 << 20, 1 << 20, &more));
  } while (more);
  EXPECT_EQ(answered, ConnectionLoad::kMaxQueuedRefusals);
  held_.clear();
}

}  // namespace
}  // namespace rill
