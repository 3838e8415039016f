#include "kernels/host_kernels.h"

#include <string>
#include <utility>
#include <vector>

#include "graph/node_def_util.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"

namespace rill {
namespace {

constexpr char kDevice[] = "ACCELERATOR";

NodeDef Node(std::string op, std::vector<std::pair<std::string, DataType>> types) {
  NodeDef node;
  node.set_name("n");
  node.set_op(std::move(op));
  for (const auto& [attr, type] : types) (*node.mutable_attr())[attr] = MakeAttr(type);
  return node;
}

class HostKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterCpuKernels(registry_);
    RegisterHostKernels(registry_, kDevice);
  }
  bool OnDevice(const NodeDef& node) const { return registry_.HasKernel(node, kDevice); }

  KernelRegistry registry_;
};

TEST_F(HostKernels, KernelsOfHostMemoryTypesOnlyAreReused) {
  EXPECT_TRUE(OnDevice(Node("AddV2", {{"T", DT_INT32}})));
  EXPECT_TRUE(OnDevice(Node("Maximum", {{"T", DT_INT32}})));
  // Float math and int64 values live in the device's memory.
  EXPECT_FALSE(OnDevice(Node("AddV2", {{"T", DT_FLOAT}})));
  EXPECT_FALSE(OnDevice(Node("AddV2", {{"T", DT_INT64}})));
  // A bool output would be device memory.
  EXPECT_FALSE(OnDevice(Node("Less", {{"T", DT_INT32}})));
  // An unconstrained type could be anything.
  EXPECT_FALSE(OnDevice(Node("_Send", {{"T", DT_INT32}})));
  // A resource handle is host memory everywhere.
  EXPECT_TRUE(OnDevice(Node("VarHandleOp", {{"dtype", DT_FLOAT}})));
}

TEST_F(HostKernels, OpsThatNeverReadTheirDataAreReusedWithInt32Shapes) {
  EXPECT_TRUE(OnDevice(Node("Identity", {{"T", DT_FLOAT}})));
  EXPECT_TRUE(OnDevice(Node("Reshape", {{"T", DT_FLOAT}, {"Tshape", DT_INT32}})));
  EXPECT_FALSE(OnDevice(Node("Reshape", {{"T", DT_FLOAT}, {"Tshape", DT_INT64}})));
  EXPECT_TRUE(OnDevice(Node("Shape", {{"T", DT_FLOAT}, {"out_type", DT_INT32}})));
  EXPECT_FALSE(OnDevice(Node("Shape", {{"T", DT_FLOAT}, {"out_type", DT_INT64}})));
  EXPECT_TRUE(OnDevice(Node("ExpandDims", {{"T", DT_DOUBLE}, {"Tdim", DT_INT32}})));
}

TEST_F(HostKernels, DataMovementOfInt32ShapesIsReusedForInt32Only) {
  EXPECT_TRUE(OnDevice(Node("Pack", {{"T", DT_INT32}})));
  EXPECT_FALSE(OnDevice(Node("Pack", {{"T", DT_FLOAT}})));
  EXPECT_TRUE(OnDevice(Node("ConcatV2", {{"T", DT_INT32}, {"Tidx", DT_INT32}})));
  EXPECT_FALSE(OnDevice(Node("ConcatV2", {{"T", DT_INT32}, {"Tidx", DT_INT64}})));
  EXPECT_TRUE(OnDevice(Node("StridedSlice", {{"T", DT_INT32}, {"Index", DT_INT32}})));
  EXPECT_FALSE(OnDevice(Node("StridedSlice", {{"T", DT_INT64}, {"Index", DT_INT32}})));
  EXPECT_TRUE(OnDevice(Node("Fill", {{"T", DT_INT32}, {"index_type", DT_INT32}})));
}

}  // namespace
}  // namespace rill
