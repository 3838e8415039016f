// The CURVE side of the zmtp_stream fuzz target: fixed keys, randomness
// that restarts with each reader (so a server draws the same short-term
// key and cookie on every run), a client that completes the handshake, and
// the records the target seals for it.
#ifndef RILL_TESTS_FUZZ_ZMTP_CURVE_H_
#define RILL_TESTS_FUZZ_ZMTP_CURVE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tests/transport/curve_client.h"
#include "transport/zmtp/curve_server.h"

namespace rill::fuzz {

// Makes libsodium's randombytes a fixed stream for this process. Call
// once, before any CURVE reader is made.
void UseDeterministicRandomness();
// Starts the stream again: a reader made next draws what the first did.
void RestartRandomness();

// The server's keys, with the fuzz client's long-term key authorized.
std::shared_ptr<const zmtp::CurveServerKeys> FuzzServerKeys();

// The fuzz client after a complete handshake with a reader made just after
// RestartRandomness(): `prefix` is what it sent (its greeting, HELLO and
// INITIATE), `client` seals what follows.
struct CurveSession {
  std::string prefix;
  testing::CurveClient client;
};
const CurveSession& HandshakenSession();

// A record of the sealed mode's input, as the target reads it:
//   byte 0  the MESSAGE frame's header flags (zmtp::kMore, zmtp::kCommand
//           bits; kLong follows the size), and
//           0x08  seal under the nonce of the record before (a replay),
//           0x10  flip a bit of the sealed box,
//           0x20  the length below counts 32-byte units;
//   byte 1  the flags inside the box (kBoxMore, kBoxCommand, or any);
//   bytes 2-3  the data's length, big-endian;
//   then the data; where the input ends first, zeros make up the rest.
inline constexpr uint8_t kRecordReplay = 0x08;
inline constexpr uint8_t kRecordCorrupt = 0x10;
inline constexpr uint8_t kRecordWide = 0x20;
// A record of `data` (in 32-byte units past 64 KiB, made up with zeros);
// the input's `last` record leaves out the zeros at its end.
std::string Record(uint8_t frame_flags, uint8_t box_flags, std::string_view data,
                   bool last = false);
// Turns records into sealed MESSAGE frames from `client`; stops after
// `max_bytes` of output.
std::string SealRecords(std::string_view records, testing::CurveClient client, size_t max_bytes);

}  // namespace rill::fuzz

#endif  // RILL_TESTS_FUZZ_ZMTP_CURVE_H_
