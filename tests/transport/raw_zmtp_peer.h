// A ZMTP client written by hand, as a stranger on a server's port would
// write one: it completes the NULL handshake (or stops anywhere in it) and
// then sends whatever bytes a test wants.
#ifndef RILL_TESTS_TRANSPORT_RAW_ZMTP_PEER_H_
#define RILL_TESTS_TRANSPORT_RAW_ZMTP_PEER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "transport/proto/rpc.pb.h"

namespace rill::testing {

class RawZmtpPeer {
 public:
  enum class Stop { kNothingSent, kAfterGreeting, kHandshakeDone };
  // Connects to 127.0.0.1:`port` and goes as far as `stop` in the
  // handshake (kHandshakeDone: greeting and READY sent as a DEALER, and
  // the server's read).
  static absl::StatusOr<std::unique_ptr<RawZmtpPeer>> Connect(int port,
                                                              Stop stop = Stop::kHandshakeDone);
  ~RawZmtpPeer();

  // False when the server closed the connection (or it broke).
  bool Send(std::string_view bytes);
  bool SendFrame(uint8_t flags, std::string_view body);
  // A request as a rill client sends it: the header, then one frame per
  // entry of `frames` (whatever the header says of them).
  bool SendRequest(const RpcHeader& header, const std::vector<std::string>& frames = {});

  // A request for `method` whose header declares one uint8 tensor of
  // `bytes`, and then that many bytes of filler, a few MiB at a time.
  bool SendTensorRequest(const std::string& method, uint64_t id, int64_t bytes);
  // A header for `method` marked as followed by more frames, then `frames`
  // empty frames (two bytes each on the wire), a MiB at a time; returns
  // how many were sent before the server hung up.
  int64_t SendEmptyFrames(const std::string& method, int64_t frames);

  // The next reply's header (its tensor frames read and dropped), or
  // nullopt when none comes within `wait` or the connection ends.
  std::optional<RpcHeader> ReadReply(absl::Duration wait);
  // A request with no tensors and its reply's status code (-1 when none).
  int Call(const std::string& method, uint64_t id, std::string* message = nullptr,
           absl::Duration wait = absl::Seconds(20));
  // Whether the server closes the connection within `wait` (what it
  // sends meanwhile is read and dropped).
  bool ClosedWithin(absl::Duration wait);
  // The same without reading: a peer that never reads stays one.
  bool ClosedUnreadWithin(absl::Duration wait);

 private:
  explicit RawZmtpPeer(int fd) : fd_(fd) {}
  // Reads exactly `n` bytes before `deadline`.
  bool ReadExactly(size_t n, absl::Time deadline, std::string* out);

  const int fd_;
};

}  // namespace rill::testing

#endif  // RILL_TESTS_TRANSPORT_RAW_ZMTP_PEER_H_
