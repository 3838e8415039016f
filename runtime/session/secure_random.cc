#include "runtime/session/secure_random.h"

#include <sys/random.h>

#include "absl/strings/str_format.h"

namespace rill {

uint64_t SecureRandom64() {
  uint64_t value = 0;
  auto* bytes = reinterpret_cast<char*>(&value);
  size_t done = 0;
  while (done < sizeof(value)) {
    // Once the pool is ready, a blocking call for 8 bytes can only be
    // interrupted by a signal before any byte (EINTR): try again.
    const ssize_t n = getrandom(bytes + done, sizeof(value) - done, 0);
    if (n > 0) done += static_cast<size_t>(n);
  }
  return value;
}

std::string SecureRandomHex() {
  return absl::StrFormat("%016x%016x", SecureRandom64(), SecureRandom64());
}

}  // namespace rill
