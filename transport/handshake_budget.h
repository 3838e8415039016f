// How many CURVE handshakes each source address may start a second: a
// flood of garbage HELLOs from one address costs the socket thread a
// bounded share of a core, and other addresses are not held back.
#ifndef RILL_TRANSPORT_HANDSHAKE_BUDGET_H_
#define RILL_TRANSPORT_HANDSHAKE_BUDGET_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace rill {

// Thread safety: none; the server's socket thread owns it.
class HandshakeBudget {
 public:
  // Each source may start `per_second` handshakes a second on average,
  // and twice that at once. 0: no limit.
  explicit HandshakeBudget(int per_second) : per_second_(per_second) {}

  // Whether a connection from `host` may start its handshake at `now`
  // (its cost is taken when it may).
  bool Take(const std::string& host, absl::Time now);

  // Sources tracked at most; the table is cleared of full buckets past it.
  static constexpr size_t kMaxSources = 4096;

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time updated;
  };
  const int per_second_;
  absl::flat_hash_map<std::string, Bucket> buckets_;
};

}  // namespace rill

#endif  // RILL_TRANSPORT_HANDSHAKE_BUDGET_H_
