// The messages of an MPI job's address exchange, as text, each carrying a
// code (HMAC-SHA256 under the job's secret) that only the job's ranks can make.
#ifndef RILL_RUNTIME_DISTRIBUTED_EXCHANGE_MESSAGES_H_
#define RILL_RUNTIME_DISTRIBUTED_EXCHANGE_MESSAGES_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rill {

// A secret shorter than this is refused: it could be guessed.
inline constexpr size_t kMinExchangeSecretBytes = 16;
// A registration or a Done longer than this is no message of the exchange.
inline constexpr size_t kMaxExchangeRequestBytes = 512;

// What signs and checks the exchange's messages: a key derived from the
// job's secret. Codes are made over a kind ("register", "done",
// "cluster") and the message's text, so that one kind's code never
// passes for another's.
// Thread safety: immutable after construction.
class ExchangeKey {
 public:
  // INVALID_ARGUMENT naming `source` (where the secret came from) when the
  // secret is shorter than kMinExchangeSecretBytes.
  static absl::StatusOr<ExchangeKey> FromSecret(std::string_view secret, std::string_view source);

  // 64 hex digits.
  std::string Sign(std::string_view kind, std::string_view text) const;
  // Compares in constant time.
  bool Verifies(std::string_view kind, std::string_view text, std::string_view code) const;

 private:
  explicit ExchangeKey(const std::array<unsigned char, 32>& key) : key_(key) {}
  std::array<unsigned char, 32> key_;
};

struct ExchangeRegistration {
  int rank = -1;
  int size = 0;
  std::string address;  // "HOST:PORT"
};

// The bodies, by method:
//   Register: "RANK SIZE HOST:PORT CODE"
//   its reply, once every rank has registered: "CODE\nADDRESS\n..." with
//             every rank's address, by rank
//   Done:     "RANK CODE"
// Parse errors never quote more of a peer's text than a short escaped
// part: INVALID_ARGUMENT for what is not the message (not printable
// ASCII, too long, malformed), UNAUTHENTICATED for a missing or wrong code.
std::string FormatRegistration(const ExchangeKey& key, const ExchangeRegistration& registration);
absl::StatusOr<ExchangeRegistration> ParseRegistration(const ExchangeKey& key,
                                                       std::string_view body);
std::string FormatDone(const ExchangeKey& key, int rank);
absl::StatusOr<int> ParseDone(const ExchangeKey& key, std::string_view body);
std::string FormatCluster(const ExchangeKey& key, const std::vector<std::string>& addresses);
// INTERNAL when the number of addresses is not `size`.
absl::StatusOr<std::vector<std::string>> ParseCluster(const ExchangeKey& key, std::string_view body,
                                                      int size);

// At most the first few bytes of `text`, escaped, and its length when it
// was cut: peer-supplied text fit for a log line or an error.
std::string PeerExcerpt(std::string_view text);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_EXCHANGE_MESSAGES_H_
