// A CURVE client written by hand, as a stranger on a server's port would
// write one: it completes the CurveZMQ handshake (or stops anywhere in it,
// or sends whatever commands a test makes), then sends sealed frames and
// opens the sealed replies.
#ifndef RILL_TESTS_TRANSPORT_RAW_CURVE_PEER_H_
#define RILL_TESTS_TRANSPORT_RAW_CURVE_PEER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/transport/curve_client.h"
#include "transport/proto/rpc.pb.h"

namespace rill::testing {

class RawCurvePeer {
 public:
  enum class Stop {
    kNothingSent,
    kAfterGreeting,  // Greetings exchanged.
    kAfterWelcome,   // HELLO sent and WELCOME opened.
    kHandshakeDone,  // INITIATE sent and READY opened.
  };
  struct Options {
    Stop stop = Stop::kHandshakeDone;
    // Bound before connecting ("127.0.0.2"), so that the server sees
    // another source; empty: the kernel's choice.
    std::string local_address = "";
  };

  // Connects to 127.0.0.1:`port` as the owner of `client` (C) expecting
  // the server key `server_key` (S), and goes as far as options.stop.
  static absl::StatusOr<std::unique_ptr<RawCurvePeer>> Connect(int port, const CurveKeyPair& client,
                                                               const CurveKey& server_key,
                                                               const Options& options);
  static absl::StatusOr<std::unique_ptr<RawCurvePeer>> Connect(int port, const CurveKeyPair& client,
                                                               const CurveKey& server_key) {
    return Connect(port, client, server_key, Options{});
  }
  ~RawCurvePeer();

  // The handshake's crypto, for a test to make commands that deviate.
  CurveClient& curve() { return curve_; }

  // The steps of the handshake, for a test that stops before one.
  absl::Status Greet();
  absl::Status HelloWelcome();
  absl::Status InitiateReady();

  // False when the server closed the connection (or it broke).
  bool Send(std::string_view bytes);
  // A frame with ZMTP's frame flags (zmtp::kMore, zmtp::kCommand).
  bool SendFrame(uint8_t flags, std::string_view body);
  bool SendCommand(std::string_view body);
  // One MESSAGE frame holding `data` sealed with box flags `flags`
  // (kBoxMore, kBoxCommand), under the next nonce or `nonce`.
  bool SendSealed(uint8_t flags, std::string_view data, std::optional<uint64_t> nonce = {});
  // A request as a rill client sends it: the header, then one frame per
  // entry of `frames` (whatever the header says of them), each sealed.
  bool SendRequest(const RpcHeader& header, const std::vector<std::string>& frames = {});

  struct Frame {
    uint8_t flags = 0;  // ZMTP's frame flags.
    std::string body;
  };
  // The next frame, or UNAVAILABLE when none comes within `wait` or the
  // connection ends.
  absl::StatusOr<Frame> ReadFrame(absl::Duration wait);
  // The next command frame's body (message frames before it are dropped).
  absl::StatusOr<std::string> ReadCommand(absl::Duration wait);
  // The next sealed frame, opened.
  absl::StatusOr<CurveClient::Opened> ReadSealed(absl::Duration wait);

  struct Reply {
    RpcHeader header;
    std::vector<std::string> frames;
  };
  // The next reply, opened (sealed commands before it are dropped), or
  // nullopt when none comes within `wait`, the connection ends or a box
  // does not open.
  std::optional<Reply> ReadReply(absl::Duration wait);
  // A request with no tensors and its reply's status code (-1 when none).
  int Call(const std::string& method, uint64_t id, std::string* message = nullptr,
           absl::Duration wait = absl::Seconds(20));
  // Whether the server closes the connection within `wait` (what it
  // sends meanwhile is read and dropped).
  bool ClosedWithin(absl::Duration wait);

 private:
  RawCurvePeer(int fd, CurveClient curve) : fd_(fd), curve_(std::move(curve)) {}
  // Reads exactly `n` bytes before `deadline`.
  bool ReadExactly(size_t n, absl::Time deadline, std::string* out);

  const int fd_;
  CurveClient curve_;
};

}  // namespace rill::testing

#endif  // RILL_TESTS_TRANSPORT_RAW_CURVE_PEER_H_
