// A .npy file, read both ways rill reads one: parsed from memory and read
// from a file (header first, then exactly the data it announces).
// Invariants: both readers agree, and what they read is written back as
// a file that reads to the same tensor.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/npy.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  const std::string_view bytes = fuzz::AsView(data, size);
  absl::StatusOr<Tensor> parsed = ParseNpy(bytes);
  // The bound keeps a header announcing gigabytes (which the data must
  // then hold) from costing more than the input's own size.
  absl::StatusOr<Tensor> read =
      ReadNpy(fuzz::WriteScratchFile("input.npy", bytes), /*max_data_bytes=*/int64_t{1} << 24);
  fuzz::Check(parsed.ok() == read.ok(), "ParseNpy and ReadNpy disagree on whether it is valid");
  if (!parsed.ok()) return 0;
  fuzz::Check(fuzz::SameTensor(*parsed, *read), "ParseNpy and ReadNpy read different tensors");
  absl::StatusOr<std::string> written = SerializeNpy(*parsed);
  fuzz::Check(written.ok(), "a tensor read from .npy does not serialize");
  absl::StatusOr<Tensor> again = ParseNpy(*written);
  fuzz::Check(again.ok() && fuzz::SameTensor(*again, *parsed), "a tensor changed in a round trip");
  return 0;
}
