// NumPy .npy files: reading (format versions 1.0, 2.0 and 3.0) and writing
// (1.0, or 2.0 when the header needs it), byte for byte as numpy.save does.
//
// Element types: float16/32/64, int8/16/32/64, uint8/16/32/64, bool and
// complex64/128, little-endian. Fortran-ordered arrays are read into
// row-major order. bfloat16 and string tensors have no .npy form and are
// refused; so are big-endian and structured dtypes.
#ifndef RILL_RUNTIME_NPY_H_
#define RILL_RUNTIME_NPY_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace rill {

// Errors are INVALID_ARGUMENT and say what is wrong and where (the byte
// offset of bad or missing data).
absl::StatusOr<Tensor> ParseNpy(std::string_view bytes);
// As ParseNpy; messages start with the path. NOT_FOUND when the file cannot
// be opened.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

// UNIMPLEMENTED for dtypes without a .npy form.
absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor);
absl::Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace rill

#endif  // RILL_RUNTIME_NPY_H_
