// Numbers from the kernel's cryptographic source, for the names a stranger
// must not guess: session and graph handles, step ids.
#ifndef RILL_RUNTIME_SESSION_SECURE_RANDOM_H_
#define RILL_RUNTIME_SESSION_SECURE_RANDOM_H_

#include <cstdint>
#include <string>

namespace rill {

uint64_t SecureRandom64();
// 128 random bits as 32 hex digits.
std::string SecureRandomHex();

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_SECURE_RANDOM_H_
