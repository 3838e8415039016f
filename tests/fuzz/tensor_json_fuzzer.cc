// A JSON tensor literal as `rill run --feed` reads it: the first line
// names the dtype (numpy's names, "float32"), the rest is the JSON.
// Invariant: a parsed tensor prints as JSON, and its printed values parse
// back to the same elements (complex ones aside).
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/tensor_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  const std::string_view input = fuzz::AsView(data, size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  absl::StatusOr<DataType> dtype = DataTypeFromNumpyName(input.substr(0, newline));
  if (!dtype.ok()) return 0;
  absl::StatusOr<Tensor> tensor = ParseJsonTensor(input.substr(newline + 1), *dtype);
  if (!tensor.ok()) return 0;
  fuzz::Check(TensorToJson(*tensor).ok(), "a parsed tensor does not print as JSON");
  // Complex elements print as [re, im] pairs, which the parser reads as
  // two real elements: those values do not come back, by design.
  if (*dtype == DT_COMPLEX64 || *dtype == DT_COMPLEX128) return 0;
  absl::StatusOr<std::string> values = JsonValues(*tensor);
  fuzz::Check(values.ok(), "a parsed tensor has no JSON values");
  absl::StatusOr<Tensor> again = ParseJsonTensor(*values, *dtype);
  fuzz::Check(again.ok(), "printed JSON values do not parse");
  // The values are printed flat.
  absl::StatusOr<Tensor> flat = tensor->Reshaped(TensorShape({tensor->NumElements()}));
  fuzz::Check(flat.ok() && fuzz::SameTensor(*flat, *again), "JSON values changed in a round trip");
  return 0;
}
