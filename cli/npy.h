// NumPy .npy files: reading (format versions 1.0, 2.0 and 3.0) and writing
// (1.0, or 2.0 when the header needs it), byte for byte as numpy.save does.
//
// Element types: float16/32/64, int8/16/32/64, uint8/16/32/64, bool and
// complex64/128, little-endian. Fortran-ordered arrays are read into
// row-major order. bfloat16 and string tensors have no .npy form and are
// refused; so are big-endian and structured dtypes.
#ifndef RILL_CLI_NPY_H_
#define RILL_CLI_NPY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace rill {

// The default bound on the data a file may hold (16 GiB).
inline constexpr int64_t kMaxNpyDataBytes = int64_t{1} << 34;

// Errors are INVALID_ARGUMENT and say what is wrong and where (the byte
// offset of bad or missing data). A header longer than 64 KiB is refused.
absl::StatusOr<Tensor> ParseNpy(std::string_view bytes);
// As ParseNpy, for a regular file: its header is read and checked first,
// then exactly the data the header's shape and dtype need (refused when
// over `max_data_bytes`, or when the file holds less or more). Messages
// name the path. NOT_FOUND when the file cannot be opened;
// INVALID_ARGUMENT, found without blocking, for a FIFO, a device or
// anything else that is not a regular file.
absl::StatusOr<Tensor> ReadNpy(const std::string& path, int64_t max_data_bytes = kMaxNpyDataBytes);

// UNIMPLEMENTED for dtypes without a .npy form.
absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor);
absl::Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace rill

#endif  // RILL_CLI_NPY_H_
