#include "transport/handshake_budget.h"

#include <algorithm>

namespace rill {

bool HandshakeBudget::Take(const std::string& host, absl::Time now) {
  if (per_second_ <= 0) return true;
  const double burst = 2.0 * per_second_;
  if (buckets_.size() >= kMaxSources && !buckets_.contains(host)) {
    // Sources whose buckets have refilled owe nothing: forget them.
    absl::erase_if(buckets_, [&](const auto& entry) {
      return (now - entry.second.updated) * per_second_ >= absl::Seconds(burst);
    });
    // Addresses enough to fill the table are themselves a flood: new ones
    // wait until some refill.
    if (buckets_.size() >= kMaxSources) return false;
  }
  auto [it, added] = buckets_.try_emplace(host, Bucket{burst, now});
  Bucket& bucket = it->second;
  bucket.tokens = std::min(
      burst, bucket.tokens + absl::ToDoubleSeconds(now - bucket.updated) * per_second_);
  bucket.updated = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

}  // namespace rill
