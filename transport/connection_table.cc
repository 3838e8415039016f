#include "transport/connection_table.h"

#include <malloc.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace rill {
namespace {

// A connection that had this much output queued leaves freed memory that
// the allocator keeps unless asked to give it back.
constexpr int64_t kTrimAfterBytes = int64_t{64} << 20;

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
    // The oldest waiting connection that has had a handshake's grace and
    // not used it goes; else the new one. A flood of fresh connections
    // thus cannot push out a client before its handshake could end.
    const absl::Time now = absl::Now();
    uint64_t dropped = connection.id();
    for (uint64_t id : waiting_) {
      const ServerConnection& c = *connections_.at(id);
      if (!c.handshake_done() && now - c.opened() >= kHandshakeGrace) {
        dropped = id;
        break;
      }
    }
    Drop(dropped, absl::ResourceExhaustedError(
                      dropped == connection.id()
                          ? "over the connection cap, with every waiting place taken"
                          : "over the connection cap, the longest waiting in its handshake"));
  }
}

// First the connection longest in its handshake (a stranger without the
// keys never gets past it), then of those that hold no call and have sent
// nothing for a while, the one idle longest: after a second when it never
// sent a request, after idle_timeout when it did.
ServerConnection* ConnectionTable::PlaceToFree(absl::Time now, absl::Duration grace) {
  const absl::Duration timeout = limits_.idle_timeout;
  const absl::Duration unused = std::min(timeout, absl::Seconds(1));
  ServerConnection* handshaking = nullptr;
  ServerConnection* idle = nullptr;
  for (auto& [id, connection] : connections_) {
    ServerConnection& c = *connection;
    if (c.over_cap()) continue;
    if (!c.handshake_done()) {
      if (now - c.opened() >= grace &&
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

ServerConnection* ConnectionTable::OldestInHandshake() {
  ServerConnection* oldest = nullptr;
  for (auto& [id, connection] : connections_) {
    if (connection->handshake_done()) continue;
    if (oldest == nullptr || connection->opened() < oldest->opened()) oldest = connection.get();
  }
  return oldest;
}

void ConnectionTable::GiveUpPlace(ServerConnection& idle) {
  log_->Log(
      "rpc server :%d: connection %s gives its place to a new one: %s for %s "
      "(limit %d connections)",
      port_, idle.name(), idle.handshake_done() ? "idle" : "in its handshake",
      absl::FormatDuration(absl::Now() - idle.last_input()), limits_.max_connections);
  Close(idle.id());
}

void ConnectionTable::HandshakeDone(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end() || !it->second->over_cap()) return;
  ServerConnection* victim = PlaceToFree(absl::Now(), absl::ZeroDuration());
  if (victim == nullptr || victim->handshake_done()) return;
  // First in line for the place freed.
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
  waiting_.push_front(id);
  GiveUpPlace(*victim);
}

bool ConnectionTable::CloseOneInHandshake(int error) {
  ServerConnection* oldest = OldestInHandshake();
  if (oldest == nullptr) return false;
  log_->Log("rpc server :%d: closed connection %s, in its handshake for %s, to accept a new one "
            "(%s)",
            port_, oldest->name(), absl::FormatDuration(absl::Now() - oldest->opened()),
            std::strerror(error));
  Close(oldest->id());
  return true;
}

void ConnectionTable::Drop(uint64_t id, const absl::Status& why) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (!absl::IsCancelled(why)) {
    ++dropped_;
    log_->Log("rpc server :%d: closed connection %s (%d so far): %s", port_, it->second->name(),
              dropped_, why.message());
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
  // What a peer that never read made the server queue was freed with the
  // connection; the allocator keeps freed small blocks unless asked (at
  // most once a second).
  const absl::Time now = absl::Now();
  if (connection->peak_output_bytes() >= kTrimAfterBytes && now - last_trim_ >= absl::Seconds(1)) {
    connection.reset();
    malloc_trim(0);
    last_trim_ = now;
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
    ServerConnection& c = *connection;
    if (!c.handshake_done() && now - c.opened() >= limits_.handshake_timeout) {
      stalled.emplace_back(id, absl::DeadlineExceededError(absl::StrFormat(
                                   "the handshake took more than %s (handshake_timeout)",
                                   absl::FormatDuration(limits_.handshake_timeout))));
    } else if (c.mid_message() && now - c.last_input() >= limit) {
      stalled.emplace_back(id, absl::DeadlineExceededError(absl::StrFormat(
                                   "%s stalled for %s (idle_timeout)",
                                   c.handshake_done() ? "a message" : "the handshake",
                                   absl::FormatDuration(now - c.last_input()))));
    } else if (const absl::Time since = c.output_stalled_since(); now - since >= limit) {
      c.ResetOnClose();
      stalled.emplace_back(id, absl::DeadlineExceededError(absl::StrFormat(
                                   "its peer has read none of its replies for %s (idle_timeout)",
                                   absl::FormatDuration(now - since))));
    }
  }
  for (auto& [id, why] : stalled) Drop(id, why);
  while (!waiting_.empty()) {
    ServerConnection* victim = PlaceToFree(now);
    if (victim == nullptr) break;
    GiveUpPlace(*victim);
  }
}

std::shared_ptr<ServerConnection> ConnectionTable::Find(uint64_t id) const {
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second;
}

void ConnectionTable::CloseAll() {
  for (auto& [id, connection] : connections_) connection->Close();
}

}  // namespace rill
