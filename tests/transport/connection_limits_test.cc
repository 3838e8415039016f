#include "transport/connection_limits.h"

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::CapturedLog;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

std::shared_ptr<ServerLoad> Server(ConnectionLimitOptions options, LogSink* log) {
  return ServerLoad::Create(options, 7, log);
}

TEST(ConnectionLoad, DefaultsFollowTheTensorLimitAndTheMachine) {
  {
    testing::ScopedMaxTensorBytes small(1 << 20);
    auto server = Server({}, nullptr);
    EXPECT_EQ(server->options().max_bytes_per_connection, (1 << 20) + (int64_t{64} << 20));
    EXPECT_GE(server->options().max_buffered_bytes, int64_t{1} << 30);
  }
  auto server = Server({}, nullptr);
  EXPECT_EQ(server->options().max_bytes_per_connection, int64_t{1} << 30);
}

TEST(ConnectionLoad, AMessageOverTheConnectionsLimitIsRefusedAndNothingIsHeld) {
  CapturedLog log;
  auto server =
      Server({.max_bytes_per_connection = 1000, .max_buffered_bytes = 1 << 20}, log.sink());
  auto connection = server->Connect("127.0.0.1:5");
  absl::StatusOr<ConnectionLoad::Ticket> first = connection->Reserve(600);
  ASSERT_OK(first);
  EXPECT_THAT(connection->Reserve(600),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("past its limit of 1000 per connection")));
  EXPECT_THAT(first->Grow(500), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("1000")));
  EXPECT_OK(first->Grow(400));
  EXPECT_EQ(connection->bytes(), 1000);
  EXPECT_EQ(server->buffered(), 1000);
  *first = ConnectionLoad::Ticket();
  EXPECT_EQ(connection->bytes(), 0);
  EXPECT_EQ(server->buffered(), 0);
}

TEST(ConnectionLoad, LargeMessagesLeaveAnEighthOfTheBudgetToSmallOnes) {
  CapturedLog log;
  const int64_t budget = int64_t{8} << 20;
  auto server =
      Server({.max_bytes_per_connection = budget, .max_buffered_bytes = budget}, log.sink());
  auto a = server->Connect("a");
  auto b = server->Connect("b");
  absl::StatusOr<ConnectionLoad::Ticket> large = a->Reserve(budget / 8 * 7);
  ASSERT_OK(large);
  EXPECT_THAT(b->Reserve(kSmallMessageBytes + 1),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_buffered_bytes")));
  EXPECT_THAT(log.Read(), HasSubstr("refusing the messages that would pass it"));
  std::vector<ConnectionLoad::Ticket> small;
  while (true) {
    absl::StatusOr<ConnectionLoad::Ticket> ticket = b->Reserve(kSmallMessageBytes);
    if (!ticket.ok()) break;
    small.push_back(*std::move(ticket));
  }
  // The small ones had the last eighth to themselves.
  EXPECT_EQ(static_cast<int64_t>(small.size()), budget / 8 / kSmallMessageBytes);
  *large = ConnectionLoad::Ticket();
  small.clear();
  EXPECT_THAT(log.Read(), HasSubstr("under half its limit again"));
  EXPECT_EQ(server->buffered(), 0);
}

TEST(ConnectionLoad, CallsOverTheLimitAreRefusedThenDroppedAndAdmittedOnceRepliesAreWritten) {
  CapturedLog log;
  auto server = Server({.max_calls_per_connection = 2}, log.sink());
  auto connection = server->Connect("127.0.0.1:5");
  auto call = [&] {
    absl::StatusOr<ConnectionLoad::Ticket> message = connection->Reserve(10);
    EXPECT_OK(message);
    return connection->AdmitCall(*std::move(message));
  };
  ConnectionLoad::Admission first = call();
  ConnectionLoad::Admission second = call();
  EXPECT_OK(first.refusal);
  EXPECT_OK(second.refusal);
  EXPECT_EQ(connection->calls(), 2);
  std::vector<ConnectionLoad::Admission> refused;
  for (int i = 0; i < ConnectionLoad::kMaxQueuedRefusals; ++i) {
    refused.push_back(call());
    EXPECT_THAT(refused.back().refusal, StatusIs(absl::StatusCode::kResourceExhausted,
                                                 HasSubstr("whose replies it has not read")));
    EXPECT_TRUE(refused.back().ticket);
  }
  EXPECT_FALSE(call().ticket);  // Beyond the queued refusals: dropped.
  EXPECT_THAT(log.Read(), HasSubstr("refusing its calls until it reads them"));
  // A refused message's bytes are not held.
  EXPECT_EQ(connection->bytes(), 20);
  first.ticket.Add(1000);  // Its reply.
  EXPECT_EQ(connection->bytes(), 1020);
  first.ticket = ConnectionLoad::Ticket();
  EXPECT_THAT(log.Read(), HasSubstr("is under its limits again (17 calls refused)"));
  EXPECT_OK(call().refusal);
}

TEST(ConnectionLoad, TicketsMayOutliveTheServer) {
  ConnectionLoad::Ticket ticket;
  {
    auto server = Server({}, nullptr);
    absl::StatusOr<ConnectionLoad::Ticket> reserved = server->Connect("x")->Reserve(10);
    ASSERT_OK(reserved);
    ticket = *std::move(reserved);
  }
  ticket.Add(5);
  ticket = ConnectionLoad::Ticket();
}

}  // namespace
}  // namespace rill
