// TensorFlow 2 SavedModels served as TensorFlow Serving serves them: the
// variables restored through the SaverDef, then a signature's input fed
// and its output fetched; real users' Keras models checked against a numpy
// forward pass of their weights (tests/testdata/savedmodels/README.md).
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "runtime/training/meta_graph.h"
#include "tests/test_util.h"

namespace rill {
namespace {

// A TF2 SavedModel's signature run as TensorFlow Serving would: the
// variables restored through the SaverDef (a StatefulPartitionedCall of the
// restore function), then `input` fed and `output` fetched by their keys.
absl::StatusOr<Tensor> RestoreAndServe(const std::string& dir, const std::string& signature,
                                       const std::string& input, const Tensor& value,
                                       const std::string& output) {
  ASSIGN_OR_RETURN(MetaGraphDef meta, ReadMetaGraph(dir + "/saved_model.pb"));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   NewSession(SessionOptions(), meta.graph_def()));
  const SaverDef& saver = meta.saver_def();
  Tensor prefix(DT_STRING, {});
  prefix.scalar<std::string>() = dir + "/variables/variables";
  RETURN_IF_ERROR(
      session->Run({{saver.filename_tensor_name(), prefix}}, {}, {saver.restore_op_name()})
          .status());
  const SignatureDef& def = meta.signature_def().at(signature);
  ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run({{def.inputs().at(input).name(), value}},
                                                         {def.outputs().at(output).name()}));
  return out[0];
}

// TensorFlow Serving's half_plus_two_tf2 fixture (TF 2.14, tf.saved_model.save):
// every signature and the restore are StatefulPartitionedCalls.
TEST(SavedModelServing, TensorFlow2SavedModelRestoresAndServes) {
  const std::string dir = testing::TestDataDir() + "/savedmodels/half_plus_two_tf2";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is absent";
  const absl::StatusOr<Tensor> y =
      RestoreAndServe(dir, "serving_default", "x", Tensor::FromVector<float>({1}, {1}), "y");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(testing::Values<float>(*y), ::testing::ElementsAre(2.5f));
}

// A Keras Sequential MLP that a TensorFlow 2.11 user saved (model.save):
// seven Dense layers, 13 inputs, a sigmoid out (tests/testdata/savedmodels/
// README.md: its source, and the outputs a numpy forward pass of its
// weights gives).
TEST(SavedModelServing, KerasSavedModelServesAsItsWeightsCompute) {
  const std::string dir = testing::SourceRoot() + "/tests/testdata/savedmodels/keras_churn_mlp";
  const Tensor x = Tensor::FromVector<float>(
      {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 0.1f, 0.2f, 0.3f,  //
       1,    0,    1,    0,    1,    0,    1,    0,    1,    0,    1,    0,    1,     //
       0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0},
      {3, 13});
  const absl::StatusOr<Tensor> y =
      RestoreAndServe(dir, "serving_default", "dense_input", x, "dense_6");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({3, 1}));
  EXPECT_THAT(testing::Values<float>(*y),
              ::testing::ElementsAre(::testing::FloatNear(0.1407232f, 1e-6f),
                                     ::testing::FloatNear(0.0232863f, 1e-6f),
                                     ::testing::FloatNear(0.2817128f, 1e-6f)));
}

// The same three price series for the RNNs of tests/testdata/savedmodels
// that read five prices: x[t] = 250 + 2t, 300 - 4t and 0.1 (t + 1).
const Tensor& PriceSeries() {
  static const Tensor* const x = new Tensor(Tensor::FromVector<float>(
      {250, 252, 254, 256, 258, 300, 296, 292, 288, 284, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f}, {3, 5, 1}));
  return *x;
}

// Serves `model`'s serving_default on PriceSeries() and checks its [3, 1]
// output against `expected` (each within 1e-5 relative).
void ExpectServesPrices(const std::string& model, const std::string& input,
                        const std::string& output, const std::vector<float>& expected) {
  const std::string dir = testing::SourceRoot() + "/tests/testdata/savedmodels/" + model;
  const absl::StatusOr<Tensor> y =
      RestoreAndServe(dir, "serving_default", input, PriceSeries(), output);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({3, 1}));
  const std::vector<float> got = testing::Values<float>(*y);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-5 * std::abs(expected[i])) << model << " row " << i;
  }
}

// A Keras Sequential LSTM that a TensorFlow 2.6 user saved: the LSTM runs
// as a StatelessWhile over TensorLists (TensorListFromTensor of the
// time-major input, GetItem and SetItem in the body, TensorListStack after).
TEST(SavedModelServing, KerasLstmServesAsItsWeightsCompute) {
  ExpectServesPrices("keras_msft_lstm", "input_6", "dense_17",
                     {258.6904739f, 291.3017566f, 12.7653260f});
}

// The same user's Keras GRU (reset_after, the bias rows split by Unpack),
// over the same TensorLists.
TEST(SavedModelServing, KerasGruServesAsItsWeightsCompute) {
  ExpectServesPrices("keras_msft_gru", "input_10", "dense_29",
                     {257.1020699f, 287.9782120f, 1.5533178f});
}

}  // namespace
}  // namespace rill
