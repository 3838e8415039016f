#include "transport/connection_limits.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/allocator.h"

namespace rill {
namespace {

ConnectionLimitOptions Resolve(ConnectionLimitOptions options) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  if (options.max_bytes_per_connection <= 0) {
    const int64_t tensor_limit =
        static_cast<int64_t>(std::min<size_t>(MaxTensorBytes(), size_t{1} << 62));
    options.max_bytes_per_connection = std::min(kGiB, tensor_limit + (int64_t{64} << 20));
  }
  if (options.max_buffered_bytes <= 0) {
    const int64_t memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    options.max_buffered_bytes = std::max<int64_t>(memory / 4, kGiB);
  }
  return options;
}

}  // namespace

ServerLoad::ServerLoad(const ConnectionLimitOptions& options, int port, LogSink* log)
    : options_(Resolve(options)), port_(port), log_(log) {}

std::shared_ptr<ServerLoad> ServerLoad::Create(const ConnectionLimitOptions& options, int port,
                                               LogSink* log) {
  return std::shared_ptr<ServerLoad>(new ServerLoad(options, port, log));
}

std::shared_ptr<ConnectionLoad> ServerLoad::Connect(std::string name) {
  return std::shared_ptr<ConnectionLoad>(new ConnectionLoad(shared_from_this(), std::move(name)));
}

int64_t ServerLoad::buffered() {
  absl::MutexLock lock(&mu_);
  return buffered_;
}

ConnectionLoad::Ticket& ConnectionLoad::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (load_ != nullptr) load_->Release(*this);
    load_ = std::move(other.load_);
    bytes_ = other.bytes_;
    call_ = other.call_;
    refusal_ = other.refusal_;
    other.load_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

ConnectionLoad::Ticket::~Ticket() {
  if (load_ != nullptr) load_->Release(*this);
}

void ConnectionLoad::Ticket::Add(int64_t bytes) {
  if (load_ == nullptr || refusal_) return;
  ServerLoad& server = *load_->server_;
  absl::MutexLock lock(&server.mu_);
  load_->bytes_ += bytes;
  server.buffered_ += bytes;
  bytes_ += bytes;
}

absl::Status ConnectionLoad::Ticket::Grow(int64_t bytes) {
  if (load_ == nullptr || refusal_) return absl::OkStatus();
  ServerLoad& server = *load_->server_;
  absl::MutexLock lock(&server.mu_);
  if (absl::Status why = load_->CheckBytes(bytes_ + bytes, bytes); !why.ok()) return why;
  load_->bytes_ += bytes;
  server.buffered_ += bytes;
  bytes_ += bytes;
  return absl::OkStatus();
}

absl::StatusOr<ConnectionLoad::Ticket> ConnectionLoad::Reserve(int64_t bytes) {
  Ticket ticket;
  ticket.load_ = shared_from_this();
  if (absl::Status why = ticket.Grow(bytes); !why.ok()) {
    ticket.load_ = nullptr;
    return why;
  }
  return ticket;
}

absl::Status ConnectionLoad::CheckBytes(int64_t message, int64_t more) {
  const ConnectionLimitOptions& limits = server_->options_;
  if (bytes_ + more > limits.max_bytes_per_connection) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the server at port %d would hold %d bytes for this connection with this message of %d "
        "bytes or more, past its limit of %d per connection (max_bytes_per_connection)",
        server_->port_, bytes_ + more, message, limits.max_bytes_per_connection));
  }
  const int64_t budget =
      message <= kSmallMessageBytes ? limits.max_buffered_bytes : limits.max_buffered_bytes / 8 * 7;
  if (server_->buffered_ + more > budget) {
    ++server_->refused_;
    if (!server_->over_) {
      server_->over_ = true;
      server_->log_.Log(
          "rpc server :%d: holds %d bytes for its connections, near its limit of %d "
          "(max_buffered_bytes): refusing the messages that would pass it",
          server_->port_, server_->buffered_, limits.max_buffered_bytes);
    }
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the server at port %d holds %d bytes received from its connections; this message of "
        "%d bytes or more would pass its limit of %d (max_buffered_bytes%s)",
        server_->port_, server_->buffered_, message, limits.max_buffered_bytes,
        message <= kSmallMessageBytes ? "" : ", of which messages over 64 KiB may take 7/8"));
  }
  return absl::OkStatus();
}

ConnectionLoad::Admission ConnectionLoad::AdmitCall(Ticket message) {
  Admission admission;
  const ConnectionLimitOptions& limits = server_->options_;
  absl::MutexLock lock(&server_->mu_);
  // The message's bytes count already; with them it may be over the byte
  // limit, which a message that passed Reserve is allowed to be.
  if (calls_ < limits.max_calls_per_connection) {
    ++calls_;
    message.call_ = true;
    admission.ticket = std::move(message);
    return admission;
  }
  ++refused_;
  if (!over_) {
    over_ = true;
    server_->log_.Log(
        "rpc server :%d: connection %s holds %d calls (%d bytes) whose replies it has "
        "not read; limit %d calls: refusing its calls until it reads them",
        server_->port_, name_, calls_, bytes_, limits.max_calls_per_connection);
  }
  admission.refusal = absl::ResourceExhaustedError(absl::StrFormat(
      "the server at port %d holds %d calls (%d bytes) from this connection whose replies it "
      "has not read; the limit per connection is %d calls (max_calls_per_connection)",
      server_->port_, calls_, bytes_, limits.max_calls_per_connection));
  // The message's bytes go with it; the refusal holds only its place.
  admission.ticket.load_ = shared_from_this();
  if (refusals_ < kMaxQueuedRefusals) {
    ++refusals_;
    admission.ticket.refusal_ = true;
  } else {
    admission.ticket.load_ = nullptr;
  }
  bytes_ -= message.bytes_;
  server_->buffered_ -= message.bytes_;
  message.load_ = nullptr;
  return admission;
}

ConnectionLoad::Ticket ConnectionLoad::TakeRefusal() {
  Ticket ticket;
  absl::MutexLock lock(&server_->mu_);
  if (refusals_ >= kMaxQueuedRefusals) return ticket;
  ++refusals_;
  ticket.load_ = shared_from_this();
  ticket.refusal_ = true;
  return ticket;
}

int64_t ConnectionLoad::calls() {
  absl::MutexLock lock(&server_->mu_);
  return calls_;
}

int64_t ConnectionLoad::bytes() {
  absl::MutexLock lock(&server_->mu_);
  return bytes_;
}

void ConnectionLoad::Release(Ticket& ticket) {
  ServerLoad& server = *server_;
  absl::MutexLock lock(&server.mu_);
  if (ticket.refusal_) {
    --refusals_;
  } else {
    if (ticket.call_) --calls_;
    bytes_ -= ticket.bytes_;
    server.buffered_ -= ticket.bytes_;
  }
  ticket.bytes_ = 0;
  if (over_ && calls_ < server.options_.max_calls_per_connection) {
    over_ = false;
    server.log_.Log("rpc server :%d: connection %s is under its limits again (%d calls refused)",
                     server.port_, name_, refused_);
    refused_ = 0;
  }
  if (server.over_ && server.buffered_ <= server.options_.max_buffered_bytes / 2) {
    server.over_ = false;
    server.log_.Log(
        "rpc server :%d: holds %d bytes for its connections, under half its limit "
        "again (%d messages refused)",
        server.port_, server.buffered_, server.refused_);
    server.refused_ = 0;
  }
}

}  // namespace rill
