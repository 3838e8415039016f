#include "runtime/distributed/exchange_messages.h"

#include <sodium.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/status_macros.h"
#include "runtime/distributed/cluster_spec.h"

namespace rill {
namespace {

constexpr size_t kCodeDigits = 2 * crypto_auth_hmacsha256_BYTES;
constexpr size_t kExcerptBytes = 48;

// Printable ASCII only: what the exchange's text is made of, and what may
// be quoted back without escaping or logging a peer's binary.
bool IsPrintable(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// Checked before anything is parsed.
absl::Status CheckRequestText(std::string_view body, std::string_view what) {
  if (body.size() > kMaxExchangeRequestBytes || !IsPrintable(body)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "address exchange: a %s of %d bytes that is not printable text of at most %d bytes", what,
        body.size(), kMaxExchangeRequestBytes));
  }
  return absl::OkStatus();
}

// Splits "TEXT CODE" at its last space; UNAUTHENTICATED unless CODE is the
// key's code of TEXT.
absl::StatusOr<std::string_view> SignedText(const ExchangeKey& key, std::string_view kind,
                                            std::string_view body) {
  const size_t space = body.rfind(' ');
  const std::string_view code = space == std::string_view::npos ? "" : body.substr(space + 1);
  const std::string_view text = body.substr(0, space == std::string_view::npos ? 0 : space);
  if (!key.Verifies(kind, text, code)) {
    return absl::UnauthenticatedError(absl::StrFormat(
        "address exchange: a %s without this job's code (made with the job's secret): is it "
        "from a rank of this job, running this version of rill?",
        kind));
  }
  return text;
}

}  // namespace

absl::StatusOr<ExchangeKey> ExchangeKey::FromSecret(std::string_view secret,
                                                    std::string_view source) {
  if (secret.size() < kMinExchangeSecretBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: a secret of %d bytes is too short to authenticate the address exchange (at least "
        "%d; e.g. `openssl rand -hex 16`)",
        source, secret.size(), kMinExchangeSecretBytes));
  }
  if (sodium_init() < 0) return absl::InternalError("libsodium cannot start");
  // Hashed with a label of its own: the key is never the secret itself,
  // which may serve another purpose too (OpenMPI's per-job key does).
  const std::string labelled = std::string("rill address exchange") + '\0' + std::string(secret);
  std::array<unsigned char, 32> key;
  crypto_hash_sha256(key.data(), reinterpret_cast<const unsigned char*>(labelled.data()),
                     labelled.size());
  return ExchangeKey(key);
}

std::string ExchangeKey::Sign(std::string_view kind, std::string_view text) const {
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, key_.data(), key_.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(kind.data()),
                                kind.size());
  const unsigned char separator = 0;
  crypto_auth_hmacsha256_update(&state, &separator, 1);
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(text.data()),
                                text.size());
  unsigned char code[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_final(&state, code);
  char hex[kCodeDigits + 1];
  sodium_bin2hex(hex, sizeof(hex), code, sizeof(code));
  return std::string(hex, kCodeDigits);
}

bool ExchangeKey::Verifies(std::string_view kind, std::string_view text,
                           std::string_view code) const {
  if (code.size() != kCodeDigits) return false;
  const std::string expected = Sign(kind, text);
  return sodium_memcmp(expected.data(), code.data(), kCodeDigits) == 0;
}

std::string FormatRegistration(const ExchangeKey& key, const ExchangeRegistration& registration) {
  const std::string text =
      absl::StrFormat("%d %d %s", registration.rank, registration.size, registration.address);
  return absl::StrCat(text, " ", key.Sign("register", text));
}

absl::StatusOr<ExchangeRegistration> ParseRegistration(const ExchangeKey& key,
                                                       std::string_view body) {
  RETURN_IF_ERROR(CheckRequestText(body, "registration"));
  ASSIGN_OR_RETURN(const std::string_view text, SignedText(key, "register", body));
  const std::vector<std::string> fields = absl::StrSplit(std::string(text), ' ');
  ExchangeRegistration registration;
  if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &registration.rank) ||
      !absl::SimpleAtoi(fields[1], &registration.size) ||
      !ClusterSpec::FromJobs({{"rank", {fields[2]}}}).ok()) {
    // Signed, so from a rank: its text may be quoted (still cut short).
    return absl::InvalidArgumentError(absl::StrFormat(
        "address exchange: registration '%s' is not 'RANK SIZE HOST:PORT'", PeerExcerpt(text)));
  }
  registration.address = fields[2];
  return registration;
}

std::string FormatDone(const ExchangeKey& key, int rank) {
  const std::string text = std::to_string(rank);
  return absl::StrCat(text, " ", key.Sign("done", text));
}

absl::StatusOr<int> ParseDone(const ExchangeKey& key, std::string_view body) {
  RETURN_IF_ERROR(CheckRequestText(body, "done"));
  ASSIGN_OR_RETURN(const std::string_view text, SignedText(key, "done", body));
  int rank = -1;
  if (!absl::SimpleAtoi(std::string(text), &rank)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("address exchange: done '%s' is not a rank", PeerExcerpt(text)));
  }
  return rank;
}

std::string FormatCluster(const ExchangeKey& key, const std::vector<std::string>& addresses) {
  const std::string text = absl::StrJoin(addresses, "\n");
  return absl::StrCat(key.Sign("cluster", text), "\n", text);
}

absl::StatusOr<std::vector<std::string>> ParseCluster(const ExchangeKey& key, std::string_view body,
                                                      int size) {
  const size_t newline = body.find('\n');
  const std::string_view code = body.substr(0, newline);
  const std::string_view text =
      newline == std::string_view::npos ? std::string_view() : body.substr(newline + 1);
  if (!key.Verifies("cluster", text, code)) {
    return absl::UnauthenticatedError(
        "the coordinator's answer does not carry this job's code (made with the job's secret): "
        "is another process serving at the coordinator's address, or does rank 0 have another "
        "secret?");
  }
  std::vector<std::string> addresses = absl::StrSplit(std::string(text), '\n');
  if (static_cast<int>(addresses.size()) != size) {
    return absl::InternalError(absl::StrFormat("the coordinator answered %d addresses for %d ranks",
                                               addresses.size(), size));
  }
  return addresses;
}

std::string PeerExcerpt(std::string_view text) {
  std::string excerpt = absl::CHexEscape(std::string(text.substr(0, kExcerptBytes)));
  if (text.size() > kExcerptBytes) excerpt += absl::StrFormat("... (%d bytes)", text.size());
  return excerpt;
}

}  // namespace rill
