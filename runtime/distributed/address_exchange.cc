#include "runtime/distributed/address_exchange.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "runtime/distributed/cluster_spec.h"
#include "transport/host_address.h"

namespace rill {
namespace {

// "HOST:PORT" or "[V6]:PORT" as host and port text.
absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address,
                                                                 std::string_view what) {
  if (!ClusterSpec::FromJobs({{"coordinator", {address}}}).ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s '%s' is not HOST:PORT with PORT in 1..65535", what, address));
  }
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
  return std::pair(host, address.substr(colon + 1));
}

std::string ErrnoText() { return std::strerror(errno); }

// Closes a socket on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

// The first address `host` resolves to, for a socket of `type`.
absl::StatusOr<sockaddr_storage> Resolve(const std::string& host, const char* port, int type,
                                         socklen_t* length) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = type;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port, &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot resolve host '%s': %s", host, gai_strerror(rc)));
  }
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  *length = found->ai_addrlen;
  freeaddrinfo(found);
  return address;
}

std::string HostText(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, text,
              sizeof(text));
    return absl::StrCat("[", text, "]");
  }
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof(text));
  return text;
}

int PortOf(const sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET6
                   ? reinterpret_cast<const sockaddr_in6&>(address).sin6_port
                   : reinterpret_cast<const sockaddr_in&>(address).sin_port);
}

// Refused messages logged one by one; the rest are only counted.
constexpr int64_t kRefusalsLogged = 5;

}  // namespace

absl::StatusOr<std::unique_ptr<AddressExchangeCoordinator>> AddressExchangeCoordinator::Start(
    const AddressExchangeOptions& options, absl::Time deadline) {
  const int size = options.size;
  if (size < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("an exchange of %d ranks", size));
  }
  ASSIGN_OR_RETURN(const auto host_port, SplitAddress(options.coordinator, "coordinator"));
  ASSIGN_OR_RETURN(ExchangeKey key, ExchangeKey::FromSecret(options.secret, options.secret_source));
  auto coordinator = std::unique_ptr<AddressExchangeCoordinator>(new AddressExchangeCoordinator(
      options.coordinator, size, deadline, std::move(key), options.log));
  const std::string& address = options.coordinator;
  {
    absl::MutexLock lock(&coordinator->mu_);
    coordinator->ranks_.resize(size);
    coordinator->done_.assign(size, false);
  }
  auto* self = coordinator.get();
  std::vector<RpcMethod> methods;
  methods.push_back(
      {.name = kAddressExchangeRegister,
       .handler = [self](RpcMessage request,
                         RpcDone reply) { self->Register(std::move(request), reply); },
       .runs_inline = true});
  methods.push_back({.name = kAddressExchangeDone,
                     .handler = [self](RpcMessage request,
                                       RpcDone reply) { self->Done(std::move(request), reply); },
                     .runs_inline = true});
  RpcServerOptions server_options;
  ASSIGN_OR_RETURN(const std::string bind_host, BindableHost(host_port.first));
  server_options.bind_address = absl::StrCat("tcp://", bind_host, ":", host_port.second);
  server_options.bind_ipc = false;
  server_options.handler_threads = 1;
  server_options.log = options.log;
  if (options.curve != nullptr) {
    server_options.curve = options.curve;
  } else {
    // Without keys the coordinator must bind the address the ranks reach,
    // beyond loopback. It may: it hands out nothing but the ranks'
    // addresses, and takes in only registrations that carry the job's code,
    // so a stranger who reaches it can neither join the cluster nor learn
    // more than the addresses it would find by scanning the ranks' hosts.
    server_options.insecure = true;
  }
  auto server = RpcServer::Start(server_options, std::move(methods));
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        absl::StrFormat("the address exchange's coordinator (MPI rank 0) cannot "
                                        "serve at %s: %s",
                                        address, server.status().message()));
  }
  coordinator->server_ = *std::move(server);
  coordinator->expiry_ = std::thread([self] { self->ExpireAtDeadline(); });
  return coordinator;
}

AddressExchangeCoordinator::~AddressExchangeCoordinator() {
  std::vector<RpcDone> waiting;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& rank : ranks_) {
      if (rank == nullptr) continue;
      for (RpcDone& done : rank->waiting) waiting.push_back(std::move(done));
      rank->waiting.clear();
    }
  }
  for (RpcDone& done : waiting) {
    done(absl::UnavailableError(absl::StrFormat("the address exchange at %s stopped", address_)),
         {});
  }
  server_.reset();
  if (expiry_.joinable()) expiry_.join();
  absl::MutexLock lock(&mu_);
  if (refused_ > kRefusalsLogged) {
    log_->Log("address exchange at %s: %d more messages refused", address_,
              refused_ - kRefusalsLogged);
  }
}

void AddressExchangeCoordinator::LogRefused(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (++refused_ > kRefusalsLogged) return;
  }
  // The error never holds more than a short escaped part of a peer's text.
  log_->Log("address exchange at %s: refused: %s", address_, why.message());
}

template <typename Has>
std::string AddressExchangeCoordinator::MissingRanks(Has has) const {
  std::vector<int> missing;
  for (int i = 0; i < size_; ++i) {
    if (!has(i)) missing.push_back(i);
  }
  return absl::StrJoin(missing, ", ");
}

void AddressExchangeCoordinator::Register(RpcMessage request, RpcDone reply) {
  // Checked before anything else, so that a message a stranger sends
  // changes nothing.
  absl::StatusOr<ExchangeRegistration> registration = ParseRegistration(key_, request.body);
  if (!registration.ok()) {
    LogRefused(registration.status());
    return reply(registration.status(), {});
  }
  const int rank = registration->rank;
  const int size = registration->size;
  if (size != size_ || rank < 0 || rank >= size_) {
    return reply(absl::InvalidArgumentError(absl::StrFormat(
                     "address exchange: rank %d of %d registered, but the coordinator (rank 0) "
                     "serves a job of %d ranks",
                     rank, size, size_)),
                 {});
  }
  const std::string& address = registration->address;
  std::vector<RpcDone> answer;
  std::string body;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return reply(
          absl::UnavailableError(absl::StrFormat("the address exchange at %s stopped", address_)),
          {});
    }
    if (!expired_.ok()) return reply(expired_, {});
    std::unique_ptr<Rank>& entry = ranks_[rank];
    if (entry != nullptr && entry->address != address) {
      return reply(absl::InvalidArgumentError(absl::StrFormat(
                       "address exchange: rank %d registered twice, as %s and as %s; is another "
                       "process running with the same rank?",
                       rank, entry->address, address)),
                   {});
    }
    if (entry == nullptr) {
      for (int other = 0; other < size_; ++other) {
        if (ranks_[other] != nullptr && ranks_[other]->address == address) {
          return reply(absl::AlreadyExistsError(absl::StrFormat(
                           "address exchange: rank %d holds %s already", other, address)),
                       {});
        }
      }
      entry = std::make_unique<Rank>();
      entry->address = address;
      ++registered_;
    }
    entry->waiting.push_back(std::move(reply));
    if (registered_ < size_) return;
    std::vector<std::string> addresses;
    for (const auto& each : ranks_) addresses.push_back(each->address);
    body = FormatCluster(key_, addresses);
    for (auto& each : ranks_) {
      for (RpcDone& done : each->waiting) answer.push_back(std::move(done));
      each->waiting.clear();
    }
  }
  for (RpcDone& done : answer) done(absl::OkStatus(), {body, {}});
}

void AddressExchangeCoordinator::Done(RpcMessage request, RpcDone reply) {
  const absl::StatusOr<int> parsed = ParseDone(key_, request.body);
  if (!parsed.ok()) {
    LogRefused(parsed.status());
    return reply(parsed.status(), {});
  }
  const int rank = *parsed;
  if (rank < 0 || rank >= size_) {
    return reply(absl::InvalidArgumentError(absl::StrFormat(
                     "address exchange: done for rank %d, not a rank in 0..%d", rank, size_ - 1)),
                 {});
  }
  {
    absl::MutexLock lock(&mu_);
    if (!done_[rank]) {
      done_[rank] = true;
      ++done_count_;
    }
  }
  reply(absl::OkStatus(), {});
}

void AddressExchangeCoordinator::ExpireAtDeadline() {
  std::vector<RpcDone> waiting;
  absl::Status expired;
  {
    absl::MutexLock lock(&mu_);
    const auto settled = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return stopping_ || registered_ == size_;
    };
    mu_.AwaitWithDeadline(absl::Condition(&settled), deadline_);
    if (settled()) return;
    expired_ = absl::DeadlineExceededError(absl::StrFormat(
        "the address exchange at %s ended at its deadline without ranks %s (of %d): did they "
        "start, with the same coordinator?",
        address_, MissingRanks([this](int i) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          return ranks_[i] != nullptr;
        }),
        size_));
    expired = expired_;
    for (auto& rank : ranks_) {
      if (rank == nullptr) continue;
      for (RpcDone& done : rank->waiting) waiting.push_back(std::move(done));
      rank->waiting.clear();
    }
  }
  for (RpcDone& done : waiting) done(expired, {});
}

absl::Status AddressExchangeCoordinator::WaitDone() {
  absl::MutexLock lock(&mu_);
  const auto all_done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return done_count_ == size_; };
  if (mu_.AwaitWithDeadline(absl::Condition(&all_done), deadline_)) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrFormat(
      "the address exchange at %s: ranks %s never confirmed the addresses", address_,
      MissingRanks([this](int i) ABSL_SHARED_LOCKS_REQUIRED(mu_) { return done_[i]; })));
}

absl::StatusOr<std::string> LocalAddressToward(const std::string& host) {
  socklen_t length = 0;
  ASSIGN_OR_RETURN(const sockaddr_storage peer, Resolve(host, "9", SOCK_DGRAM, &length));
  const Fd fd(socket(peer.ss_family, SOCK_DGRAM, 0));
  if (fd.get() < 0) return absl::InternalError("socket: " + ErrnoText());
  // Connecting a UDP socket only chooses the route and the local address.
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&peer), length) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("no route from this machine to '%s': %s", host, ErrnoText()));
  }
  sockaddr_storage local{};
  socklen_t local_length = sizeof(local);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &local_length) != 0) {
    return absl::InternalError("getsockname: " + ErrnoText());
  }
  return HostText(local);
}

absl::StatusOr<int> PickFreePort(const std::string& host) {
  std::string bare = host;
  if (bare.starts_with('[') && bare.ends_with(']')) bare = bare.substr(1, bare.size() - 2);
  socklen_t length = 0;
  ASSIGN_OR_RETURN(sockaddr_storage address, Resolve(bare, "0", SOCK_STREAM, &length));
  const Fd fd(socket(address.ss_family, SOCK_STREAM, 0));
  if (fd.get() < 0) return absl::InternalError("socket: " + ErrnoText());
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot bind a port on '%s': %s", host, ErrnoText()));
  }
  socklen_t bound_length = sizeof(address);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &bound_length) != 0) {
    return absl::InternalError("getsockname: " + ErrnoText());
  }
  return PortOf(address);
}

absl::StatusOr<std::vector<std::string>> ExchangeAddresses(const AddressExchangeOptions& options) {
  const std::string who = absl::StrFormat("MPI rank %d of %d", options.rank, options.size);
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": the rank is out of range"));
  }
  ASSIGN_OR_RETURN(const auto coordinator, SplitAddress(options.coordinator, "coordinator"));
  absl::StatusOr<ExchangeKey> key = ExchangeKey::FromSecret(options.secret, options.secret_source);
  if (!key.ok()) {
    return absl::Status(key.status().code(), absl::StrCat(who, ": ", key.status().message()));
  }
  std::string host = options.host;
  if (host.empty()) {
    auto toward = LocalAddressToward(coordinator.first);
    if (!toward.ok()) {
      return absl::Status(toward.status().code(),
                          absl::StrCat(who, ": this rank's address toward the coordinator ",
                                       options.coordinator, ": ", toward.status().message()));
    }
    host = *std::move(toward);
  }
  const absl::Time deadline = absl::Now() + options.deadline;
  std::unique_ptr<AddressExchangeCoordinator> served;
  if (options.rank == 0) {
    ASSIGN_OR_RETURN(served, AddressExchangeCoordinator::Start(options, deadline));
  }
  RpcClientOptions client_options;
  client_options.address = options.coordinator;
  client_options.prefer_ipc = false;
  client_options.curve = options.curve;
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> client, RpcClient::Connect(client_options));

  // The port is free now and bound again by this task's server later; in
  // between another process may take it. The window is short, and then
  // the server fails to start, naming its address, rather than two tasks
  // sharing one: an acceptable price for an exchange that needs nothing
  // more of the job (a port the coordinator finds taken by another rank is
  // picked again below).
  ASSIGN_OR_RETURN(int port, PickFreePort(host));
  absl::Status last = absl::UnavailableError("no answer");
  std::vector<std::string> addresses;
  while (true) {
    const std::string address = absl::StrCat(host, ":", port);
    // Waits a little past the deadline: a coordinator's own answer at its
    // deadline (which ranks are missing) says more than silence.
    absl::StatusOr<RpcMessage> reply =
        client->CallSync(kAddressExchangeRegister,
                         {FormatRegistration(*key, {options.rank, options.size, address}), {}},
                         deadline + absl::Seconds(2));
    if (reply.ok()) {
      absl::StatusOr<std::vector<std::string>> answer =
          ParseCluster(*key, reply->body, options.size);
      if (!answer.ok()) {
        return absl::Status(answer.status().code(), absl::StrCat(who, ": ", options.coordinator,
                                                                 ": ", answer.status().message()));
      }
      addresses = *std::move(answer);
      break;
    }
    last = reply.status();
    if (absl::IsAlreadyExists(last)) {
      ASSIGN_OR_RETURN(port, PickFreePort(host));
      continue;
    }
    if (absl::IsDeadlineExceeded(last) || absl::Now() >= deadline) break;
    if (absl::IsUnauthenticated(last)) {
      return absl::UnauthenticatedError(absl::StrFormat(
          "%s: the coordinator at %s refused this rank's code: do all ranks have the same %s? "
          "(%s)",
          who, options.coordinator, options.secret_source, last.message()));
    }
    if (!absl::IsUnavailable(last)) {
      return absl::Status(last.code(), absl::StrCat(who, ": ", last.message()));
    }
    // The coordinator is not up yet (rank 0 starts when it starts), or fell
    // silent: retry at a pace that does not flood it.
    absl::SleepFor(absl::Milliseconds(200));
  }
  if (addresses.empty()) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "%s: no addresses from the address exchange's coordinator at %s within %s (MPI rank 0 "
        "serves it; do all ranks start, with the same coordinator?): %s",
        who, options.coordinator, absl::FormatDuration(options.deadline), last.message()));
  }
  // Best effort: the coordinator stops at its deadline without it.
  (void)client->CallSync(kAddressExchangeDone, {FormatDone(*key, options.rank), {}},
                         std::min(deadline, absl::Now() + absl::Seconds(5)));
  // Rank 0 stops serving once every rank has its answer; a rank that
  // never confirms is no failure of this one.
  if (served != nullptr) (void)served->WaitDone();
  return addresses;
}

}  // namespace rill
