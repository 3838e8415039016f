#include "io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace rill::crc32c {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // reflected Castagnoli

// Slicing-by-8 tables for machines without the SSE4.2 instruction.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

[[maybe_unused]] uint32_t ExtendPortable(uint32_t c, const uint8_t* p, size_t n) {
  static constexpr Tables kTables;
  const auto& t = kTables.t;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= c;
    c = t[7][word & 0xff] ^ t[6][(word >> 8) & 0xff] ^ t[5][(word >> 16) & 0xff] ^
        t[4][(word >> 24) & 0xff] ^ t[3][(word >> 32) & 0xff] ^ t[2][(word >> 40) & 0xff] ^
        t[1][(word >> 48) & 0xff] ^ t[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__SSE4_2__)
// The crc32 instruction has a latency of three cycles and a throughput of
// one, so one chain of it runs at a third of the speed the core allows.
// Long buffers are therefore cut into three consecutive parts whose CRCs
// run side by side, then joined: the CRC of a‖b is the CRC of a moved past
// len(b) zero bytes, xor the CRC of b (from a zero register). Moving a CRC
// past a fixed number of zero bytes is linear, so it is four table lookups.

// Multiplies the 32x32 GF(2) matrix `mat` (one column per bit) by `vec`.
constexpr uint32_t MatrixTimes(const std::array<uint32_t, 32>& mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec != 0; ++i, vec >>= 1) {
    if (vec & 1) sum ^= mat[i];
  }
  return sum;
}

constexpr std::array<uint32_t, 32> MatrixSquare(const std::array<uint32_t, 32>& mat) {
  std::array<uint32_t, 32> square{};
  for (int i = 0; i < 32; ++i) square[i] = MatrixTimes(mat, mat[i]);
  return square;
}

// Lookup tables that move a CRC register past `bytes` zero bytes (a power
// of two), one table per byte of the register.
struct ZerosTables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit constexpr ZerosTables(size_t bytes) {
    std::array<uint32_t, 32> op{};  // The operator for one zero bit.
    op[0] = kPolynomial;
    for (int i = 1; i < 32; ++i) op[i] = 1u << (i - 1);
    for (size_t bits = 1; bits < 8 * bytes; bits *= 2) op = MatrixSquare(op);
    for (uint32_t i = 0; i < 256; ++i) {
      for (int k = 0; k < 4; ++k) t[k][i] = MatrixTimes(op, i << (8 * k));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

// Three streams of kLong bytes fit in the L1 cache together; kShort
// catches the tail of a long buffer and mid-sized ones.
constexpr size_t kLong = 8192;
constexpr size_t kShort = 256;

// Runs the three streams over `3 * block` bytes at `p` and joins them.
inline uint64_t ThreeStreams(uint64_t c0, const uint8_t* p, size_t block,
                             const ZerosTables& shift) {
  uint64_t c1 = 0;
  uint64_t c2 = 0;
  for (const uint8_t* end = p + block; p < end; p += 8) {
    uint64_t w0, w1, w2;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + block, 8);
    std::memcpy(&w2, p + 2 * block, 8);
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  c0 = shift.Shift(static_cast<uint32_t>(c0)) ^ c1;
  return shift.Shift(static_cast<uint32_t>(c0)) ^ c2;
}

uint32_t ExtendHardware(uint32_t c, const uint8_t* p, size_t n) {
  static constexpr ZerosTables kLongShift(kLong);
  static constexpr ZerosTables kShortShift(kShort);
  uint64_t c64 = c;
  for (; n >= 3 * kLong; p += 3 * kLong, n -= 3 * kLong) {
    c64 = ThreeStreams(c64, p, kLong, kLongShift);
  }
  for (; n >= 3 * kShort; p += 3 * kShort, n -= 3 * kShort) {
    c64 = ThreeStreams(c64, p, kShort, kShortShift);
  }
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (n-- > 0) c = _mm_crc32_u8(c, *p++);
  return c;
}
#endif

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__SSE4_2__)
  return ~ExtendHardware(~crc, p, n);
#else
  return ~ExtendPortable(~crc, p, n);
#endif
}

}  // namespace rill::crc32c
