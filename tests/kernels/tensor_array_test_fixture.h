// TensorArrayTest: the TensorArray kernels run one at a time on a shared
// resource manager, as the executor runs a step's nodes.
#ifndef RILL_TESTS_KERNELS_TENSOR_ARRAY_TEST_FIXTURE_H_
#define RILL_TESTS_KERNELS_TENSOR_ARRAY_TEST_FIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "kernels/framework/resource_mgr.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {

struct ArraySpec {
  DataType dtype = DT_FLOAT;
  int32_t size = 3;
  bool dynamic_size = false;
  bool clear_after_read = true;
  PartialTensorShape element_shape = {};
  bool identical_element_shapes = false;
};

inline Tensor Flow() { return Tensor::Scalar<float>(0.0f); }

// Kernels of one step that share one device's resource manager. Each
// helper runs one op on arrays of the step `step_`.
class TensorArrayTest : public ::testing::Test {
 protected:
  KernelTester Op(const char* op) const {
    KernelTester t(op);
    t.WithResourceMgr(resources_).WithStepId(step_);
    return t;
  }

  absl::StatusOr<Tensor> TryNewArray(const ArraySpec& spec) const {
    KernelTester t = Op("TensorArrayV3");
    t.Input(Tensor::Scalar<int32_t>(spec.size))
        .Attr("dtype", spec.dtype)
        .Attr("dynamic_size", spec.dynamic_size)
        .Attr("clear_after_read", spec.clear_after_read)
        .Attr("element_shape", spec.element_shape)
        .Attr("identical_element_shapes", spec.identical_element_shapes)
        .Attr("tensor_array_name", "foo");
    ASSIGN_OR_RETURN(std::vector<Tensor> out, t.Run());
    EXPECT_THAT(out[1], TensorEq(Tensor::Scalar<float>(0.0f)));
    return out[0];
  }

  Tensor NewArray(const ArraySpec& spec) const {
    absl::StatusOr<Tensor> handle = TryNewArray(spec);
    EXPECT_OK(handle);
    return handle.ok() ? *handle : Tensor();
  }

  absl::Status Write(const Tensor& ta, int32_t index, Tensor value) const {
    KernelTester t = Op("TensorArrayWriteV3");
    t.Input(ta).Input(Tensor::Scalar<int32_t>(index)).Input(std::move(value)).Input(Flow());
    return t.Run().status();
  }

  absl::StatusOr<Tensor> Read(const Tensor& ta, int32_t index, DataType dtype = DT_FLOAT) const {
    KernelTester t = Op("TensorArrayReadV3");
    t.Input(ta).Input(Tensor::Scalar<int32_t>(index)).Input(Flow()).Attr("dtype", dtype);
    return t.RunOne();
  }

  absl::StatusOr<Tensor> Gather(const Tensor& ta, std::vector<int32_t> indices,
                                DataType dtype = DT_FLOAT,
                                PartialTensorShape element_shape = {}) const {
    KernelTester t = Op("TensorArrayGatherV3");
    const int64_t n = static_cast<int64_t>(indices.size());
    t.Input(ta)
        .Input<int32_t>({n}, std::move(indices))
        .Input(Flow())
        .Attr("dtype", dtype)
        .Attr("element_shape", element_shape);
    return t.RunOne();
  }

  absl::Status Scatter(const Tensor& ta, std::vector<int32_t> indices, Tensor value) const {
    KernelTester t = Op("TensorArrayScatterV3");
    const int64_t n = static_cast<int64_t>(indices.size());
    t.Input(ta).Input<int32_t>({n}, std::move(indices)).Input(std::move(value)).Input(Flow());
    return t.Run().status();
  }

  absl::StatusOr<std::vector<Tensor>> Concat(const Tensor& ta, DataType dtype = DT_FLOAT,
                                             PartialTensorShape except0 = {}) const {
    KernelTester t = Op("TensorArrayConcatV3");
    t.Input(ta).Input(Flow()).Attr("dtype", dtype).Attr("element_shape_except0", except0);
    return t.Run();
  }

  absl::Status Split(const Tensor& ta, Tensor value, std::vector<int64_t> lengths) const {
    KernelTester t = Op("TensorArraySplitV3");
    const int64_t n = static_cast<int64_t>(lengths.size());
    t.Input(ta).Input(std::move(value)).Input<int64_t>({n}, std::move(lengths)).Input(Flow());
    return t.Run().status();
  }

  absl::StatusOr<int32_t> Size(const Tensor& ta) const {
    KernelTester t = Op("TensorArraySizeV3");
    t.Input(ta).Input(Flow());
    ASSIGN_OR_RETURN(Tensor size, t.RunOne());
    return size.scalar<int32_t>();
  }

  absl::Status Close(const Tensor& ta) const {
    KernelTester t = Op("TensorArrayCloseV3");
    t.Input(ta);
    return t.Run().status();
  }

  absl::StatusOr<Tensor> Grad(const Tensor& ta, const std::string& source) const {
    KernelTester t = Op("TensorArrayGradV3");
    t.Input(ta).Input(Flow()).Attr("source", source);
    ASSIGN_OR_RETURN(std::vector<Tensor> out, t.Run());
    return out[0];
  }

  std::shared_ptr<ResourceMgr> resources_ = std::make_shared<ResourceMgr>();
  int64_t step_ = 7;
};

inline Tensor F(float v) { return Tensor::Scalar<float>(v); }
inline const PartialTensorShape kScalar = TensorShape();

}  // namespace rill::testing

#endif  // RILL_TESTS_KERNELS_TENSOR_ARRAY_TEST_FIXTURE_H_
