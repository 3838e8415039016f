#include "runtime/distributed/address_exchange.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "runtime/distributed/exchange_messages.h"
#include "tests/test_util.h"
#include "transport/curve.h"
#include "transport/rpc.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::_;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kUnauthenticated = absl::StatusCode::kUnauthenticated;
constexpr auto kDeadline = absl::StatusCode::kDeadlineExceeded;

constexpr char kSecret[] = "0123456789abcdef-the-jobs-secret";
constexpr char kStrangersSecret[] = "a-guess-at-the-secret-0123456789";
// An address no rank has: the stranger's.
constexpr char kStrangersAddress[] = "127.0.0.1:6666";

ExchangeKey Key(const std::string& secret = kSecret) {
  absl::StatusOr<ExchangeKey> key = ExchangeKey::FromSecret(secret, "the test's secret");
  EXPECT_OK(key);
  return *std::move(key);
}

std::string Coordinator() { return absl::StrFormat("127.0.0.1:%d", testing::FreePort()); }

AddressExchangeOptions Options(const std::string& coordinator, int rank, int size) {
  AddressExchangeOptions options;
  options.coordinator = coordinator;
  options.rank = rank;
  options.size = size;
  options.secret = kSecret;
  options.deadline = absl::Seconds(30);
  return options;
}

std::unique_ptr<RpcClient> Connect(const std::string& address,
                                   std::shared_ptr<const CurveKeys> curve = nullptr) {
  RpcClientOptions options;
  options.address = address;
  options.prefer_ipc = false;
  options.curve = std::move(curve);
  absl::StatusOr<std::unique_ptr<RpcClient>> client = RpcClient::Connect(options);
  EXPECT_OK(client);
  return client.ok() ? *std::move(client) : nullptr;
}

// A call answered by the coordinator, once it serves: a client that calls
// before it binds hears nothing, which is UNAVAILABLE, and calls again.
absl::StatusOr<RpcMessage> CallWhenServing(RpcClient& client, const std::string& method,
                                           const std::string& body) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (true) {
    absl::StatusOr<RpcMessage> reply = client.CallSync(method, {body, {}}, deadline);
    if (!absl::IsUnavailable(reply.status()) || absl::Now() >= deadline) return reply;
  }
}

int LineCount(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST(ExchangeMessages, ASignedRegistrationReadsBackAndAnotherKeysDoesNot) {
  const std::string body = FormatRegistration(Key(), {1, 3, "10.0.0.2:4000"});
  ASSERT_OK_AND_ASSIGN(const ExchangeRegistration read, ParseRegistration(Key(), body));
  EXPECT_EQ(read.rank, 1);
  EXPECT_EQ(read.size, 3);
  EXPECT_EQ(read.address, "10.0.0.2:4000");
  EXPECT_THAT(ParseRegistration(Key(kStrangersSecret), body),
              StatusIs(kUnauthenticated, HasSubstr("without this job's code")));
  // The old unsigned form, and a code of another kind of message.
  EXPECT_THAT(ParseRegistration(Key(), "1 3 10.0.0.2:4000"), StatusIs(kUnauthenticated, _));
  EXPECT_THAT(ParseDone(Key(), absl::StrFormat("1 %s", Key().Sign("register", "1"))),
              StatusIs(kUnauthenticated, _));
  ASSERT_OK_AND_ASSIGN(const int rank, ParseDone(Key(), FormatDone(Key(), 2)));
  EXPECT_EQ(rank, 2);
  const std::string cluster = FormatCluster(Key(), {"a:1", "b:2"});
  EXPECT_THAT(ParseCluster(Key(), cluster, 2), testing::IsOkAndHolds(ElementsAre("a:1", "b:2")));
  EXPECT_THAT(ParseCluster(Key(kStrangersSecret), cluster, 2), StatusIs(kUnauthenticated, _));
  EXPECT_THAT(ParseCluster(Key(), FormatCluster(Key(kStrangersSecret), {"a:1", "b:2"}), 2),
              StatusIs(kUnauthenticated, HasSubstr("another process serving")));
}

TEST(ExchangeMessages, BinaryOrHugeTextIsRefusedWithoutQuotingIt) {
  const std::string binary = "1 2 127.0.0.1:1 \xff\xfe\xc3\x28";
  EXPECT_THAT(ParseRegistration(Key(), binary),
              StatusIs(kInvalid, AllOf(HasSubstr("not printable text"), Not(HasSubstr("\xff")),
                                       Not(HasSubstr("127.0.0.1")))));
  EXPECT_THAT(ParseDone(Key(), std::string(100000, 'x')),
              StatusIs(kInvalid, HasSubstr("a done of 100000 bytes")));
  EXPECT_THAT(ExchangeKey::FromSecret("short", "RILL_EXCHANGE_TOKEN").status(),
              StatusIs(kInvalid, HasSubstr("RILL_EXCHANGE_TOKEN: a secret of 5 bytes")));
  EXPECT_EQ(PeerExcerpt("a\xff"), "a\\xff");
  EXPECT_THAT(PeerExcerpt(std::string(1000, 'z')), HasSubstr("... (1000 bytes)"));
}

TEST(AddressExchange, TheCoordinatorEndsAtItsDeadlineNamingTheMissingRanks) {
  const std::string coordinator = Coordinator();
  AddressExchangeOptions options = Options(coordinator, 0, 3);
  options.deadline = absl::Seconds(1);
  EXPECT_THAT(ExchangeAddresses(options),
              StatusIs(kDeadline, AllOf(HasSubstr(coordinator), HasSubstr("without ranks 1, 2"))));
}

TEST(AddressExchange, ARankRegisteringTwiceWithAnotherAddressIsRefused) {
  const std::string address = Coordinator();
  AddressExchangeOptions options = Options(address, 0, 2);
  options.log = testing::QuietLog();
  ASSERT_OK_AND_ASSIGN(auto coordinator,
                       AddressExchangeCoordinator::Start(options, absl::Now() + absl::Seconds(30)));
  auto client = Connect(address);
  ASSERT_NE(client, nullptr);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  const auto registration = [](int rank, int size, const std::string& address) {
    return RpcMessage{FormatRegistration(Key(), {rank, size, address}), {}};
  };
  // Rank 1's registration waits for rank 0's; registering rank 1 again
  // with another address, or rank 0 with rank 1's, is refused.
  absl::Notification answered;
  absl::Status first;
  client->Call(kAddressExchangeRegister, registration(1, 2, "127.0.0.1:1001"), deadline,
               [&](absl::Status status, RpcMessage) {
                 first = status;
                 answered.Notify();
               });
  EXPECT_THAT(
      client->CallSync(kAddressExchangeRegister, registration(1, 2, "127.0.0.1:1002"), deadline),
      StatusIs(kInvalid, HasSubstr("rank 1 registered twice")));
  EXPECT_THAT(
      client->CallSync(kAddressExchangeRegister, registration(0, 2, "127.0.0.1:1001"), deadline),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("rank 1 holds")));
  EXPECT_THAT(
      client->CallSync(kAddressExchangeRegister, registration(0, 3, "127.0.0.1:1003"), deadline),
      StatusIs(kInvalid, HasSubstr("a job of 2 ranks")));
  EXPECT_THAT(
      client->CallSync(kAddressExchangeRegister,
                       {absl::StrCat("zero ", Key().Sign("register", "zero")), {}}, deadline),
      StatusIs(kInvalid, HasSubstr("not 'RANK SIZE HOST:PORT'")));
  ASSERT_OK_AND_ASSIGN(
      RpcMessage reply,
      client->CallSync(kAddressExchangeRegister, registration(0, 2, "127.0.0.1:1003"), deadline));
  EXPECT_THAT(ParseCluster(Key(), reply.body, 2),
              testing::IsOkAndHolds(ElementsAre("127.0.0.1:1003", "127.0.0.1:1001")));
  answered.WaitForNotification();
  EXPECT_OK(first);
  for (int rank : {0, 1}) {
    EXPECT_OK(
        client->CallSync(kAddressExchangeDone, {FormatDone(Key(), rank), {}}, deadline).status());
  }
  EXPECT_OK(coordinator->WaitDone());
}

// A stranger reaches rank 0's coordinator before the other ranks and
// registers as each of them, with no code, a guessed one, and a code made
// with another secret: every one is refused, and the ranks that come
// later get the cluster of their own addresses.
TEST(AddressExchange, AStrangerWhoRegistersFirstStaysOutOfTheCluster) {
  const std::string coordinator = Coordinator();
  testing::CapturedLog log;
  std::vector<absl::StatusOr<std::vector<std::string>>> results(3, absl::UnknownError("not run"));
  std::vector<std::thread> ranks;
  const auto run_rank = [&](int rank) {
    AddressExchangeOptions options = Options(coordinator, rank, 3);
    options.log = log.sink();
    results[rank] = ExchangeAddresses(options);
  };
  ranks.emplace_back(run_rank, 0);

  auto stranger = Connect(coordinator);
  ASSERT_NE(stranger, nullptr);
  EXPECT_THAT(CallWhenServing(*stranger, kAddressExchangeRegister,
                              absl::StrFormat("1 3 %s", kStrangersAddress)),
              StatusIs(kUnauthenticated, _));
  for (int rank : {1, 2}) {
    const std::string text = absl::StrFormat("%d 3 %s", rank, kStrangersAddress);
    for (const std::string& code :
         {std::string(64, '0'), Key(kStrangersSecret).Sign("register", text)}) {
      EXPECT_THAT(
          CallWhenServing(*stranger, kAddressExchangeRegister, absl::StrCat(text, " ", code)),
          StatusIs(kUnauthenticated, _));
    }
  }
  for (int rank : {0, 1, 2}) {
    EXPECT_THAT(
        CallWhenServing(*stranger, kAddressExchangeDone, FormatDone(Key(kStrangersSecret), rank)),
        StatusIs(kUnauthenticated, _));
  }

  ranks.emplace_back(run_rank, 2);
  ranks.emplace_back(run_rank, 1);
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_OK(results[rank]) << rank;
    EXPECT_EQ(*results[rank], *results[0]) << rank;
  }
  EXPECT_THAT(*results[0], SizeIs(3));
  EXPECT_THAT(*results[0], Each(Not(HasSubstr(":6666"))));
  EXPECT_THAT(log.Read(), HasSubstr("refused"));
}

// A real rank whose secret differs from rank 0's is told so at once.
TEST(AddressExchange, ARankWithAnotherSecretIsToldWhy) {
  const std::string coordinator = Coordinator();
  AddressExchangeOptions first = Options(coordinator, 0, 2);
  first.deadline = absl::Seconds(2);
  first.log = testing::QuietLog();
  absl::Status rank0;
  std::thread serving([&] { rank0 = ExchangeAddresses(first).status(); });
  AddressExchangeOptions second = Options(coordinator, 1, 2);
  second.secret = kStrangersSecret;
  second.secret_source = "RILL_EXCHANGE_TOKEN";
  EXPECT_THAT(ExchangeAddresses(second),
              StatusIs(kUnauthenticated,
                       AllOf(HasSubstr("MPI rank 1 of 2"), HasSubstr(coordinator),
                             HasSubstr("do all ranks have the same RILL_EXCHANGE_TOKEN"))));
  serving.join();
  EXPECT_THAT(rank0, StatusIs(kDeadline, HasSubstr("without ranks 1")));
}

// Standard error, read back: where protobuf logs what it cannot parse.
class CapturedStderr {
 public:
  CapturedStderr() : path_(testing::MakeTempDir() + "/stderr") {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  ~CapturedStderr() { Restore(); }
  std::string Read() {
    Restore();
    return testing::ReadFileOrDie(path_);
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  const std::string path_;
  int saved_ = -1;
};

TEST(AddressExchange, InvalidUtf8IsRefusedAndLoggedABoundedNumberOfTimes) {
  const std::string address = Coordinator();
  testing::CapturedLog log;
  CapturedStderr stderr_text;
  {
    AddressExchangeOptions options = Options(address, 0, 2);
    options.log = log.sink();
    ASSERT_OK_AND_ASSIGN(auto coordinator, AddressExchangeCoordinator::Start(
                                               options, absl::Now() + absl::Seconds(30)));
    auto stranger = Connect(address);
    ASSERT_NE(stranger, nullptr);
    const std::string bodies[] = {"\xff\xfe\xfd", "1 2 127.0.0.1:1 \xc3\x28",
                                  std::string(4096, '\x80')};
    for (int i = 0; i < 50; ++i) {
      for (const std::string& body : bodies) {
        for (const char* method : {kAddressExchangeRegister, kAddressExchangeDone}) {
          absl::StatusOr<RpcMessage> reply = CallWhenServing(*stranger, method, body);
          ASSERT_THAT(reply, StatusIs(kInvalid, HasSubstr("not printable text")));
          EXPECT_THAT(std::string(reply.status().message()), Not(HasSubstr("\xc3\x28")));
        }
      }
    }
  }
  const std::string logged = log.Read();
  const std::string err = stderr_text.Read();
  // 300 refused: five lines for the first, one that counts the rest.
  EXPECT_LE(LineCount(logged), 6) << logged;
  EXPECT_THAT(logged, HasSubstr("295 more messages refused"));
  EXPECT_THAT(logged, AllOf(Not(HasSubstr("\xff")), Not(HasSubstr("\x80")), Not(HasSubstr("\xc3")),
                            Not(HasSubstr("127.0.0.1:1 "))));
  EXPECT_THAT(err, Not(HasSubstr("UTF-8"))) << err;
  EXPECT_LE(LineCount(err), 6) << err;
}

// With the cluster's CURVE keys the exchange speaks CURVE: a process
// without them never gets an answer, and the ranks, which have them, do.
TEST(AddressExchange, WithCurveKeysOnlyTheirHoldersTakePart) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq was built without CURVE";
  const std::string dir = testing::MakeTempDir() + "/keys";
  ASSERT_OK(WriteCurveKeys(dir, "").status());
  ASSERT_OK_AND_ASSIGN(CurveKeys keys, LoadCurveKeys(dir));
  const auto curve = std::make_shared<const CurveKeys>(keys);
  const std::string coordinator = Coordinator();
  std::vector<absl::StatusOr<std::vector<std::string>>> results(2, absl::UnknownError("not run"));
  const auto run_rank = [&](int rank) {
    AddressExchangeOptions options = Options(coordinator, rank, 2);
    options.curve = curve;
    options.secret = keys.secret_key;
    results[rank] = ExchangeAddresses(options);
  };
  std::thread rank0(run_rank, 0);
  auto stranger = Connect(coordinator);
  ASSERT_NE(stranger, nullptr);
  // Even with the job's code (as if it had seen one go by) a process
  // without the keys does not get through.
  const ExchangeKey key = *ExchangeKey::FromSecret(keys.secret_key, "the keys");
  EXPECT_THAT(stranger->CallSync(kAddressExchangeRegister,
                                 {FormatRegistration(key, {1, 2, kStrangersAddress}), {}},
                                 absl::Now() + absl::Seconds(1)),
              Not(testing::IsOk()));
  std::thread rank1(run_rank, 1);
  rank0.join();
  rank1.join();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_OK(results[rank]) << rank;
    EXPECT_THAT(*results[rank], AllOf(SizeIs(2), Each(Not(HasSubstr(":6666")))));
  }
  EXPECT_EQ(*results[0], *results[1]);
}

}  // namespace
}  // namespace rill
