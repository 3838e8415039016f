// Launchers of the CUDA softmax cross-entropy losses, dense and sparse
// labels. They queue work on `stream` and return the launch's error.
#ifndef RILL_KERNELS_CUDA_XENT_KERNELS_H_
#define RILL_KERNELS_CUDA_XENT_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace rill::cuda {

// Per row of [rows, classes] logits: loss = sum_c labels * (log sum exp -
// logits) and backprop = softmax(logits) - labels, with the row maximum
// subtracted first so that exp cannot overflow.
template <typename T>
cudaError_t LaunchSoftmaxXent(const T* logits, const T* labels, T* loss, T* backprop, int64_t rows,
                              int64_t classes, cudaStream_t stream);

// The same with one class index per row (int32 or int64 labels, in device
// memory). A label outside [0, classes) gives the row NaN, loss and
// backprop alike, as TensorFlow's GPU kernel does: checking would need the
// labels on the host, a wait for the stream.
template <typename T, typename L>
cudaError_t LaunchSparseSoftmaxXent(const T* logits, const L* labels, T* loss, T* backprop,
                                    int64_t rows, int64_t classes, cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_XENT_KERNELS_H_
