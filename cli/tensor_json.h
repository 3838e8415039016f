// Tensors as JSON: literals to feed ("3", "[[1, 2], [3, 4]]", "true") and a
// self-describing object to print ({"dtype": "float32", "shape": [2],
// "values": [1.5, 2]}).
//
// Floats are written in their shortest round-trip form (float32 as float32,
// so 0.1f prints as 0.1). NaN and infinities, which JSON numbers cannot
// express, are written as the strings "NaN", "Infinity" and "-Infinity";
// the parser accepts those strings (any case, also "nan", "inf", "-inf") for
// floating-point dtypes. Complex elements are written as [re, im] pairs.
#ifndef RILL_CLI_TENSOR_JSON_H_
#define RILL_CLI_TENSOR_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace rill {

// numpy's names: "float32", "float64", "float16", "bfloat16", "int8" ...
// "uint64", "bool", "complex64", "complex128", "string"; other dtypes fall
// back to DataTypeString.
std::string NumpyDtypeName(DataType dtype);
absl::StatusOr<DataType> DataTypeFromNumpyName(std::string_view name);

// Parses a JSON number, boolean, string or nested list of them (rectangular)
// into a tensor of `dtype`: the nesting gives the shape ("[]" is shape [0]).
// INVALID_ARGUMENT naming the byte offset for malformed JSON, ragged lists,
// a value that `dtype` cannot hold exactly (1.5 or 300 for uint8, 1e39 for
// float32) or of the wrong kind ("true" for float32).
absl::StatusOr<Tensor> ParseJsonTensor(std::string_view text, DataType dtype);

// The elements flattened in row-major order: "[1.5, 2]".
// UNIMPLEMENTED for dtypes without a JSON form (resource, variant).
absl::StatusOr<std::string> JsonValues(const Tensor& tensor);
// {"dtype": "float32", "shape": [2], "values": [1.5, 2]}
absl::StatusOr<std::string> TensorToJson(const Tensor& tensor);

}  // namespace rill

#endif  // RILL_CLI_TENSOR_JSON_H_
