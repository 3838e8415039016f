// IDX files, the format of MNIST and Fashion-MNIST: a big-endian header
// (two zero bytes, a type code, the rank, one uint32 per dimension) and the
// elements, big-endian. Files may be gzip-compressed or raw.
#ifndef RILL_RUNTIME_DATA_IDX_READER_H_
#define RILL_RUNTIME_DATA_IDX_READER_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace rill {

// Type codes: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
// 0x0E float64. INVALID_ARGUMENT naming `source` and the byte offset (in
// the decompressed bytes) for a bad magic, an unknown type code, a header
// or data that is cut short, dimensions whose product overflows, or bytes
// after the data.
absl::StatusOr<Tensor> ParseIdx(std::string_view bytes, std::string_view source);

// Reads `path`, gzip-compressed or not. NOT_FOUND when it cannot be opened,
// DATA_LOSS for a corrupt or cut-short gzip stream.
absl::StatusOr<Tensor> ReadIdx(const std::string& path);

enum class MnistSplit { kTrain, kTest };

// One split of an MNIST-style data set: the images as float32
// [N, rows * cols] ([N, 784] for MNIST) scaled to [0, 1], the labels as
// int32 or int64 [N].
struct MnistData {
  Tensor images;
  Tensor labels;
};

// Reads the standard file names from `dir`: train-images-idx3-ubyte and
// train-labels-idx1-ubyte (or t10k-... for kTest), each with ".gz" or
// without. Checks that images are uint8 [N, rows, cols] and labels uint8
// [N] with the same N. `label_dtype` is DT_INT32 or DT_INT64.
absl::StatusOr<MnistData> LoadMnist(const std::string& dir, MnistSplit split,
                                    DataType label_dtype = DT_INT32);

// Where the Debian package dataset-fashion-mnist installs Fashion-MNIST.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

}  // namespace rill

#endif  // RILL_RUNTIME_DATA_IDX_READER_H_
