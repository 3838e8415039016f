// A Keras LSTM as TensorFlow 2 writes it, beside the same LSTM in TensorFlow
// 1's primitives: the SavedModel tests/testdata/savedmodels/keras_msft_lstm
// (a StatelessWhile over TensorLists, lowered and inlined here) served for
// one batch, against a WhileLoop over a TensorArray built from the same
// weights, in one process, the two interleaved. Both must give the same
// outputs. Prints one line `result: {json}` with the median microseconds of
// a Run of each and their ratio.
//   keras_lstm_bench [--dir DIR] [--batch N] [--reps N] [--runs N] [--threads N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "io/bundle_reader.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "runtime/training/meta_graph.h"

namespace rill {
namespace {

struct Options {
  std::string dir = "tests/testdata/savedmodels/keras_msft_lstm";
  int batch = 64;
  int reps = 15;  // Interleaved repetitions, each timing `runs` Runs of each.
  int runs = 20;
  int threads = 1;
};

constexpr int kSteps = 5;
constexpr int kUnits = 64;

Output Ints(const Scope& s, std::vector<int32_t> v) {
  return ops::Const(s, Tensor::FromVector<int32_t>(v, {static_cast<int64_t>(v.size())}), DT_INT32);
}

// The TensorFlow 1 form: x [B, 5, 1] time-major into a TensorArray, a
// WhileLoop of the Keras cell (gates i, f, c, o; sigmoid and tanh), the last
// output through the three Dense layers (relu, relu, linear).
absl::StatusOr<Output> BuildTf1Lstm(const Scope& s, const Output& x,
                                    const io::BundleReader& bundle) {
  const auto weight = [&](const std::string& key) -> absl::StatusOr<Output> {
    ASSIGN_OR_RETURN(Tensor t, bundle.Read(key + "/.ATTRIBUTES/VARIABLE_VALUE"));
    return ops::Const(s, t, t.dtype());
  };
  ASSIGN_OR_RETURN(const Output kernel, weight("trainable_variables/0"));
  ASSIGN_OR_RETURN(const Output recurrent, weight("trainable_variables/1"));
  ASSIGN_OR_RETURN(const Output bias, weight("trainable_variables/2"));
  const ops::TensorArrayV3 array(s, ops::Const(s, Tensor::Scalar<int32_t>(kSteps), DT_INT32),
                                 DT_FLOAT);
  const Output flow =
      ops::TensorArrayScatterV3(s, array.handle, ops::Range(s, 0, kSteps, 1),
                                ops::Transpose(s, x, Ints(s, {1, 0, 2})), array.flow);
  const Output state_shape = ops::ConcatV2(
      s, {ops::Slice(s, ops::Shape(s, x), Ints(s, {0}), Ints(s, {1})), Ints(s, {kUnits})}, 0);
  const Output zeros = ops::Fill(s, state_shape, 0.f);
  // As TensorFlow 1's Keras backend.rnn: every step's output written to a
  // second TensorArray, stacked after the loop, the last one taken.
  const ops::TensorArrayV3 outputs(s, ops::Const(s, Tensor::Scalar<int32_t>(kSteps), DT_INT32),
                                   DT_FLOAT);
  std::vector<Output> out;
  RETURN_IF_ERROR(ops::WhileLoop(
      s, {ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32), zeros, zeros, outputs.flow},
      [](const Scope& c, const std::vector<Output>& v, Output* keep_going) {
        *keep_going = ops::Less(c, v[0], kSteps);
        return c.status();
      },
      [&](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
        const Output x_t = ops::TensorArrayReadV3(b, array.handle, v[0], flow, DT_FLOAT);
        const Output z = ops::BiasAdd(
            b, ops::AddV2(b, ops::MatMul(b, x_t, kernel), ops::MatMul(b, v[1], recurrent)), bias);
        const ops::Split gates(b, 1, z, 4);
        const Output c = ops::AddV2(
            b, ops::Mul(b, ops::Sigmoid(b, gates.output[1]), v[2]),
            ops::Mul(b, ops::Sigmoid(b, gates.output[0]), ops::Tanh(b, gates.output[2])));
        const Output h = ops::Mul(b, ops::Sigmoid(b, gates.output[3]), ops::Tanh(b, c));
        const Output written = ops::TensorArrayWriteV3(b, outputs.handle, v[0], h, v[3]);
        *next = {ops::AddV2(b, v[0], 1), h, c, written};
        return b.status();
      },
      &out));
  const Output all =
      ops::TensorArrayGatherV3(s, outputs.handle, ops::Range(s, 0, kSteps, 1), out[3], DT_FLOAT);
  Output y = ops::Reshape(s, ops::Slice(s, all, Ints(s, {kSteps - 1, 0, 0}), Ints(s, {1, -1, -1})),
                          ops::ConcatV2(s, {Ints(s, {-1}), Ints(s, {kUnits})}, 0));
  for (int layer = 1; layer <= 3; ++layer) {
    const std::string name = fmt::format("layer_with_weights-{}", layer);
    ASSIGN_OR_RETURN(const Output w, weight(name + "/kernel"));
    ASSIGN_OR_RETURN(const Output b, weight(name + "/bias"));
    y = ops::BiasAdd(s, ops::MatMul(s, y, w), b);
    if (layer < 3) y = ops::Relu(s, y);
  }
  return y;
}

// Microseconds per Run of `runs` Runs.
absl::StatusOr<double> TimeRuns(Session& session, const std::string& input, const Tensor& x,
                                const std::string& output, int runs) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) RETURN_IF_ERROR(session.Run({{input, x}}, {output}).status());
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
             .count() /
         runs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

absl::Status Run(const Options& options) {
  SessionOptions session_options;
  session_options.inter_op_threads = options.threads;
  session_options.intra_op_threads = options.threads;

  // TensorFlow 2's: the SavedModel, restored, its serving signature.
  ASSIGN_OR_RETURN(const MetaGraphDef meta, ReadMetaGraph(options.dir + "/saved_model.pb"));
  ASSIGN_OR_RETURN(auto tf2, NewSession(session_options, meta.graph_def()));
  Tensor prefix(DT_STRING, {});
  prefix.scalar<std::string>() = options.dir + "/variables/variables";
  RETURN_IF_ERROR(tf2->Run({{meta.saver_def().filename_tensor_name(), prefix}}, {},
                           {meta.saver_def().restore_op_name()})
                      .status());
  const SignatureDef& signature = meta.signature_def().at("serving_default");
  const std::string tf2_in = signature.inputs().at("input_6").name();
  const std::string tf2_out = signature.outputs().at("dense_17").name();

  // TensorFlow 1's, from the same checkpoint.
  ASSIGN_OR_RETURN(auto bundle, io::BundleReader::Open(options.dir + "/variables/variables"));
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ASSIGN_OR_RETURN(const Output y, BuildTf1Lstm(root, x, *bundle));
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());
  ASSIGN_OR_RETURN(auto tf1, NewSession(session_options, graph));

  Tensor input(DT_FLOAT, TensorShape({options.batch, kSteps, 1}));
  std::mt19937 random(0);
  std::uniform_real_distribution<float> prices(240.f, 300.f);
  for (int64_t i = 0; i < input.NumElements(); ++i) input.data<float>()[i] = prices(random);
  ASSIGN_OR_RETURN(auto a, tf2->Run({{tf2_in, input}}, {tf2_out}));
  ASSIGN_OR_RETURN(auto b, tf1->Run({{"x", input}}, {y.name()}));
  double max_diff = 0;
  for (int64_t i = 0; i < a[0].NumElements(); ++i) {
    max_diff = std::max<double>(max_diff, std::abs(a[0].data<float>()[i] - b[0].data<float>()[i]));
  }
  if (!(a[0].shape() == b[0].shape()) || max_diff > 1e-2) {
    return absl::InternalError(
        fmt::format("the two LSTMs disagree: shapes {} and {}, max |diff| {}",
                    a[0].shape().DebugString(), b[0].shape().DebugString(), max_diff));
  }

  std::vector<double> tf2_us, tf1_us;
  for (int rep = 0; rep < options.reps; ++rep) {
    // Alternate which goes first, so that neither always runs warm.
    for (int k = 0; k < 2; ++k) {
      if ((rep + k) % 2 == 0) {
        ASSIGN_OR_RETURN(double us, TimeRuns(*tf2, tf2_in, input, tf2_out, options.runs));
        tf2_us.push_back(us);
      } else {
        ASSIGN_OR_RETURN(double us, TimeRuns(*tf1, "x", input, y.name(), options.runs));
        tf1_us.push_back(us);
      }
    }
  }
  const double tf2_median = Median(tf2_us), tf1_median = Median(tf1_us);
  fmt::print(
      "result: {{\"batch\": {}, \"threads\": {}, \"keras_tensorlist_us\": {:.1f}, "
      "\"tf1_tensorarray_us\": {:.1f}, \"ratio\": {:.3f}, \"max_abs_diff\": {:.2e}}}\n",
      options.batch, options.threads, tf2_median, tf1_median, tf2_median / tf1_median, max_diff);
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "usage: keras_lstm_bench [--dir DIR] [--batch N>=1] [--reps N>=1] [--runs N>=1] "
    "[--threads N>=1]\n";

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  using rill::kUsage;
  const absl::StatusOr<rill::cli::ParsedArgs> parsed = rill::cli::ParseOptionsOnly(
      {argv + 1, argv + argc}, {"dir", "batch", "reps", "runs", "threads"}, {});
  if (!parsed.ok()) return rill::cli::PrintUsageError("keras_lstm_bench", parsed.status(), kUsage);
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  rill::Options options;
  options.dir = parsed->Value("dir").value_or(options.dir);
  for (const auto& [flag, out] :
       std::vector<std::pair<const char*, int*>>{{"batch", &options.batch},
                                                 {"reps", &options.reps},
                                                 {"runs", &options.runs},
                                                 {"threads", &options.threads}}) {
    const std::optional<std::string> value = parsed->Value(flag);
    if (value && (!absl::SimpleAtoi(*value, out) || *out < 1)) {
      return rill::cli::PrintUsageError(
          "keras_lstm_bench",
          absl::InvalidArgumentError(
              fmt::format("--{} '{}': expected a whole number >= 1", flag, *value)),
          kUsage);
    }
  }
  const absl::Status status = rill::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "keras_lstm_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
