#include "transport/connection_table.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace rill {
namespace {

// Connections closed for what they sent, logged per second before the
// rest are only counted.
constexpr int kLoggedClosesPerSecond = 20;

}  // namespace

void ConnectionTable::Add(std::shared_ptr<ServerConnection> added) {
  ServerConnection& connection = *added;
  connections_.emplace(connection.id(), std::move(added));
  if (served_ < limits_.max_connections) {
    ++served_;
    return;
  }
  if (ServerConnection* victim = PlaceToFree(absl::Now())) {
    GiveUpPlace(*victim);
    ++served_;
    return;
  }
  connection.set_over_cap(true);
  waiting_.push_back(connection.id());
  if (refused_++ == 0) {
    log_->Log(
        "rpc server :%d: %d connections open, the limit, none idle for %s: refusing "
        "the calls of new ones until one closes or idles",
        port_, served_, absl::FormatDuration(limits_.idle_timeout));
  }
  if (static_cast<int>(waiting_.size()) > kMaxWaiting) {
    const uint64_t oldest = waiting_.front();
    Drop(oldest, absl::ResourceExhaustedError("over the connection cap, the longest waiting"));
  }
}

// First the connection longest in its handshake (a stranger without the
// keys never gets past it), then of those that hold no call and have sent
// nothing for a while, the one idle longest: after a second when it never
// sent a request, after idle_timeout when it did.
ServerConnection* ConnectionTable::PlaceToFree(absl::Time now) {
  const absl::Duration timeout = limits_.idle_timeout;
  const absl::Duration unused = std::min(timeout, absl::Seconds(1));
  ServerConnection* handshaking = nullptr;
  ServerConnection* idle = nullptr;
  for (auto& [id, connection] : connections_) {
    ServerConnection& c = *connection;
    if (c.over_cap()) continue;
    if (!c.handshake_done()) {
      if (now - c.opened() >= kHandshakeGrace &&
          (handshaking == nullptr || c.opened() < handshaking->opened())) {
        handshaking = &c;
      }
      continue;
    }
    if (now - c.last_input() < (c.requests() == 0 ? unused : timeout)) continue;
    if (c.mid_message() || c.load().calls() > 0 || c.has_output()) continue;
    int pending = 0;
    if (ioctl(c.fd(), FIONREAD, &pending) == 0 && pending > 0) continue;
    if (idle == nullptr || c.last_input() < idle->last_input()) idle = &c;
  }
  return handshaking != nullptr ? handshaking : idle;
}

void ConnectionTable::GiveUpPlace(ServerConnection& idle) {
  log_->Log(
      "rpc server :%d: connection %s gives its place to a new one: %s for %s "
      "(limit %d connections)",
      port_, idle.name(), idle.handshake_done() ? "idle" : "in its handshake",
      absl::FormatDuration(absl::Now() - idle.last_input()), limits_.max_connections);
  Close(idle.id());
}

void ConnectionTable::Drop(uint64_t id, const absl::Status& why) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (!absl::IsCancelled(why)) {
    ++dropped_;
    const absl::Time second = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
    if (second != log_second_) {
      if (unlogged_ > 0) {
        log_->Log("rpc server :%d: %d more connections closed in the last second", port_,
                  unlogged_);
      }
      log_second_ = second;
      logged_this_second_ = 0;
      unlogged_ = 0;
    }
    if (logged_this_second_++ < kLoggedClosesPerSecond) {
      log_->Log("rpc server :%d: closed connection %s (%d so far): %s", port_, it->second->name(),
                dropped_, why.message());
    } else {
      ++unlogged_;
    }
  }
  Close(id);
}

void ConnectionTable::Close(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  std::shared_ptr<ServerConnection> connection = std::move(it->second);
  connections_.erase(it);
  forget_(*connection);
  connection->Close();
  if (connection->over_cap()) {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
  } else {
    --served_;
  }
  PromoteWaiting();
}

void ConnectionTable::PromoteWaiting() {
  while (!waiting_.empty() && served_ < limits_.max_connections) {
    auto it = connections_.find(waiting_.front());
    waiting_.pop_front();
    if (it == connections_.end()) continue;
    it->second->set_over_cap(false);
    ++served_;
  }
  if (waiting_.empty() && refused_ > 0) {
    log_->Log("rpc server :%d: every connection is served again (%d were over the cap)", port_,
              refused_);
    refused_ = 0;
  }
}

void ConnectionTable::Check(absl::Time now) {
  const absl::Duration limit = limits_.idle_timeout;
  std::vector<std::pair<uint64_t, absl::Status>> stalled;
  for (auto& [id, connection] : connections_) {
    if (!connection->mid_message() || now - connection->last_input() < limit) continue;
    stalled.emplace_back(id, absl::DeadlineExceededError(absl::StrFormat(
                                 "%s stalled for %s (idle_timeout)",
                                 connection->handshake_done() ? "a message" : "the handshake",
                                 absl::FormatDuration(now - connection->last_input()))));
  }
  for (auto& [id, why] : stalled) Drop(id, why);
  while (!waiting_.empty()) {
    ServerConnection* victim = PlaceToFree(now);
    if (victim == nullptr) break;
    GiveUpPlace(*victim);
  }
}

// What `_hello` tells a connection: this machine's id and ipc endpoint
// only to a peer on this machine, which may use them.

std::shared_ptr<ServerConnection> ConnectionTable::Find(uint64_t id) const {
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second;
}

void ConnectionTable::CloseAll() {
  for (auto& [id, connection] : connections_) connection->Close();
}

}  // namespace rill
