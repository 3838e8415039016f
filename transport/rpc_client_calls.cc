// The RPC client's table of calls in flight and held back, and reply
// decoding.
#include "transport/rpc_client_calls.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_format.h"
#include "transport/wire.h"

namespace rill::rpc_internal {

absl::StatusOr<RpcMessage> DecodeReply(Completion completion, const std::string& method,
                                       const std::string& address) {
  if (!completion.status.ok()) return completion.status;
  absl::StatusOr<std::vector<Tensor>> tensors =
      DecodeTensors(completion.header, completion.frames, 1);
  if (!tensors.ok()) {
    return absl::InternalError(absl::StrFormat("reply to %s from %s is malformed: %s", method,
                                               address, tensors.status().message()));
  }
  return RpcMessage{std::move(*completion.header.mutable_body()), *std::move(tensors)};
}

absl::Status CallDeadlineExceeded(const std::string& method, const std::string& address,
                                  absl::Time start, absl::Time deadline) {
  return absl::DeadlineExceededError(absl::StrFormat("call %s to %s: no reply within %d ms", method,
                                                     address,
                                                     absl::ToInt64Milliseconds(deadline - start)));
}

bool IsLarge(const Outgoing& call) {
  size_t bytes = 0;
  for (const zmq::message_t& frame : call.tensor_frames) bytes += frame.size();
  return bytes >= kLargeBytes;
}

void CallTable::Add(uint64_t id, Pending call) {
  deadlines_.emplace(call.deadline, id);
  pending_.emplace(id, std::move(call));
}

std::optional<Pending> CallTable::Take(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  Pending call = std::move(it->second);
  pending_.erase(it);
  deadlines_.erase({call.deadline, id});
  return call;
}

std::vector<Pending> CallTable::TakeExpired(absl::Time now) {
  std::vector<Pending> expired;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const uint64_t id = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = pending_.find(id);
    expired.push_back(std::move(it->second));
    pending_.erase(it);
  }
  return expired;
}

std::vector<Pending> CallTable::TakeAll() {
  std::vector<Pending> all;
  for (auto& [id, call] : pending_) all.push_back(std::move(call));
  pending_.clear();
  deadlines_.clear();
  return all;
}

bool CallTable::MustHold(const Outgoing& call) const {
  return IsLarge(call) && (!held_.empty() || LargeInFlight() >= kMaxLargeInFlight);
}

void CallTable::Hold(Outgoing call) { held_.push_back(std::move(call)); }

std::vector<Outgoing> CallTable::TakeExpiredHeld(absl::Time now) {
  std::vector<Outgoing> expired;
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    expired.push_back(std::move(*it));
    it = held_.erase(it);
  }
  return expired;
}

std::optional<Outgoing> CallTable::TakeReleasable() {
  if (held_.empty() || LargeInFlight() >= kMaxLargeInFlight) return std::nullopt;
  Outgoing call = std::move(held_.front());
  held_.pop_front();
  return call;
}

std::vector<Outgoing> CallTable::TakeAllHeld() {
  std::vector<Outgoing> all(std::make_move_iterator(held_.begin()),
                            std::make_move_iterator(held_.end()));
  held_.clear();
  return all;
}

absl::Time CallTable::NextDeadline(absl::Time bound) const {
  absl::Time next = bound;
  if (!deadlines_.empty()) next = std::min(next, deadlines_.begin()->first);
  for (const Outgoing& call : held_) next = std::min(next, call.deadline);
  return next;
}

int CallTable::LargeInFlight() const {
  int large = 0;
  for (const auto& [id, call] : pending_) large += call.large ? 1 : 0;
  return large;
}

}  // namespace rill::rpc_internal
