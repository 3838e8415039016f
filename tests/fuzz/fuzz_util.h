// Helpers shared by the fuzz targets: splitting one input into parts,
// scratch files for readers that take a path, tensor comparison, and the
// check that turns a broken invariant into a crash the fuzzer keeps.
#ifndef RILL_TESTS_FUZZ_FUZZ_UTIL_H_
#define RILL_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"

namespace rill::fuzz {

// Separates the parts of an input that holds several (frames of a
// message, files of a checkpoint): rare in real data, and short enough for
// the fuzzer to learn from its comparisons.
inline constexpr std::string_view kPartSeparator = "\n--8<--\n";
// Separates messages in the service targets' inputs.
inline constexpr std::string_view kMessageSeparator = "\n==8<==\n";

std::vector<std::string_view> Split(std::string_view data, std::string_view separator);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own under $TMPDIR (else /dev/shm, else
// /tmp), made on first use and removed at exit.
const std::string& ScratchDir();
// ScratchDir()/name, emptied (made when missing), so that no file of an
// earlier input is read.
std::string FreshScratchDir(const std::string& name);
// Writes `bytes` to `path`, replacing it.
void WriteFile(const std::string& path, std::string_view bytes);
// Writes `bytes` to ScratchDir()/name, replacing it; returns the path.
std::string WriteScratchFile(const std::string& name, std::string_view bytes);

// Same dtype, shape and elements (NaNs equal to NaNs of any payload).
bool SameTensor(const Tensor& a, const Tensor& b);

// Reads every element (so that a sanitizer sees a bad buffer) and returns a
// value the optimizer cannot drop.
uint64_t TouchElements(const Tensor& tensor);

// Aborts with `what` when `ok` is false: an invariant of the code under
// test is broken (for example a value that does not round-trip).
void Check(bool ok, std::string_view what);

// What every target's LLVMFuzzerInitialize does. Silences protobuf's
// logging (it logs each malformed string it parses), so that a fuzzer's
// output shows only what the fuzzer says. With max_tensor_bytes > 0, sets
// that limit, as `rill server --max_tensor_bytes` does: shapes in an input
// may claim anything, which a reader or import would otherwise allocate,
// and a small limit keeps each step's work small.
void Initialize(size_t max_tensor_bytes = 0);

}  // namespace rill::fuzz

#endif  // RILL_TESTS_FUZZ_FUZZ_UTIL_H_
