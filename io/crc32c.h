// CRC32C (Castagnoli) and the masking TensorFlow applies to CRCs stored in
// checksummed data: checkpoint entries, table blocks and TFRecord frames.
#ifndef RILL_IO_CRC32C_H_
#define RILL_IO_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rill::crc32c {

// Continues `crc` (the value of earlier bytes) over `n` more bytes, so that
// Value(a + b) == Extend(Value(a), b).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view bytes) { return Value(bytes.data(), bytes.size()); }

// A CRC stored inside data that is itself CRC'd is masked first, because the
// CRC of a string that contains its own CRC is weak.
constexpr uint32_t kMaskDelta = 0xa282ead8u;

constexpr uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

constexpr uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace rill::crc32c

#endif  // RILL_IO_CRC32C_H_
