// Runs `rill run` (the real binary, RILL_BIN) as a user would.

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cli/npy.h"
#include "cli/tensor_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::RegressionXs;
using ::rill::testing::RegressionYs;
using ::testing::HasSubstr;
using testing::StatusIs;

using RunResult = testing::ProgramResult;

RunResult RunRill(std::vector<std::string> args) {
  args.insert(args.begin(), {std::getenv("RILL_BIN"), "run"});
  return testing::RunProgram(args);
}

std::string GraphPath(const std::string& name) {
  return testing::TestDataDir() + "/tf_graphs/" + name;
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The tensor printed for `name` by --json, read back with the dtype and
// shape it was printed with.
std::optional<Tensor> JsonFetch(const std::string& out, const std::string& name) {
  const std::regex entry(
      "\"" + name +
      R"re(": \{"dtype": "(\w+)", "shape": \[([0-9, ]*)\], "values": (\[[^\]]*\])\})re");
  std::smatch match;
  if (!std::regex_search(out, match, entry)) return std::nullopt;
  auto dtype = DataTypeFromNumpyName(match[1].str());
  if (!dtype.ok()) return std::nullopt;
  auto values = ParseJsonTensor(match[3].str(), *dtype);
  std::string dims = "[";
  dims += match[2].str();
  dims += "]";
  auto shape = ParseJsonTensor(dims, DT_INT64);
  if (!values.ok() || !shape.ok()) return std::nullopt;
  auto reshaped = values->Reshaped(TensorShape(absl::Span<const int64_t>(
      shape->data<int64_t>(), static_cast<size_t>(shape->NumElements()))));
  if (!reshaped.ok()) return std::nullopt;
  return *reshaped;
}

class RunCommand : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Npy(const std::string& name, const Tensor& t) {
    const std::string path = dir_ + "/" + name;
    EXPECT_OK(WriteNpy(path, t));
    return path;
  }

  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(RunCommand, TrainsTheRegressionGraph) {
  const RunResult r =
      RunRill({GraphPath("rust_regression.pb"), "--feed", "x=" + Npy("x.npy", RegressionXs()),
               "--feed", "y=" + Npy("y.npy", RegressionYs()), "--init", "init", "--target", "train",
               "--steps", "201", "--fetch", "w", "--fetch", "b", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 1) << r.out;
  const std::optional<Tensor> w = JsonFetch(r.out, "w");
  const std::optional<Tensor> b = JsonFetch(r.out, "b");
  ASSERT_TRUE(w.has_value() && b.has_value()) << r.out;
  ASSERT_EQ(w->shape(), TensorShape({1}));
  ASSERT_EQ(b->shape(), TensorShape({1}));
  EXPECT_NEAR(w->data<float>()[0], 0.1, 1e-3) << r.out;
  EXPECT_NEAR(b->data<float>()[0], 0.3, 1e-3) << r.out;
}

// --trace writes the last training step's Chrome trace: the train op's
// nodes as slices on the local task's CPU.
TEST_F(RunCommand, TraceWritesTheLastStepsTimeline) {
  const std::string trace = dir_ + "/step.trace.json";
  const RunResult r =
      RunRill({GraphPath("rust_regression.pb"), "--feed", "x=" + Npy("x.npy", RegressionXs()),
               "--feed", "y=" + Npy("y.npy", RegressionYs()), "--init", "init", "--target", "train",
               "--steps", "3", "--trace", trace, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("trace: " + trace));
  std::ifstream in(trace);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(json, HasSubstr("\"traceEvents\""));
  EXPECT_THAT(json, HasSubstr("\"name\":\"/job:localhost/replica:0/task:0\""));
  EXPECT_THAT(json, HasSubstr("\"name\":\"/device:CPU:0\""));
  EXPECT_THAT(json, HasSubstr("\"cat\":\"ApplyGradientDescent\""));

  const RunResult nothing = RunRill({GraphPath("rust_regression.pb"), "--trace", trace});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_THAT(nothing.err, HasSubstr("--trace: no step to trace"));
  const RunResult unwritable =
      RunRill({GraphPath("rust_addition.pb"), "--feed", "x=3", "--feed", "y=1", "--fetch", "z",
               "--trace", dir_ + "/missing/dir/trace.json"});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_THAT(unwritable.err, HasSubstr(dir_ + "/missing/dir"));
}

// --trace over a device (a private node here, never one in /dev), a FIFO
// or a directory is refused before any step runs, and the node stays.
TEST_F(RunCommand, TraceRefusesToReplaceWhatIsNotARegularFile) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string device = dir_ + "/null";
  const bool have_device = mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  const int mknod_error = errno;
  std::vector<std::pair<std::string, std::string>> nodes = {{fifo, "a FIFO"},
                                                            {dir_, "a directory"}};
  if (have_device) nodes.emplace_back(device, "a character device");
  for (const auto& [path, kind] : nodes) {
    const RunResult r = RunRill({GraphPath("rust_addition.pb"), "--feed", "x=3", "--feed", "y=1",
                                 "--fetch", "z", "--trace", path});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--trace: '" + path + "' is " + kind +
                                 ", not a regular file: refusing to replace it"));
    EXPECT_EQ(r.out, "") << "no step runs";
  }
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  if (!have_device) GTEST_SKIP() << "mknod refused (it needs root): " << std::strerror(mknod_error);
  ASSERT_EQ(lstat(device.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// --out does not write into a FIFO or a device that has a fetch's name.
TEST_F(RunCommand, OutRefusesToWriteIntoAFifoOrDevice) {
  const std::string out = dir_ + "/fetched";
  std::filesystem::create_directories(out);
  ASSERT_EQ(mkfifo((out + "/z.npy").c_str(), 0600), 0);
  const RunResult r = RunRill({GraphPath("rust_addition.pb"), "--feed", "x=3", "--feed", "y=1",
                               "--fetch", "z", "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("'" + out + "/z.npy' is a FIFO, not a regular file"));
}

// Issue 4's rule: spreading the graph over local devices (variables on
// CPU:1 by the replica device setter, the rest on CPU:0) gives the same
// numbers as one device.
TEST_F(RunCommand, TwoLocalDevicesTrainTheSameWeightsAsOne) {
  std::vector<std::string> args = {
      GraphPath("rust_regression_ckpt.pb"), "--feed", "x=" + Npy("x.npy", RegressionXs()), "--feed",
      "y=" + Npy("y.npy", RegressionYs()),
      // w starts from an unseeded RandomUniform: both runs
      // start from this value instead.
      "--feed", "random_uniform=[0.5]", "--init", "init", "--target", "train", "--steps", "201",
      "--fetch", "w", "--fetch", "b", "--json"};
  const RunResult one = RunRill(args);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  args.insert(args.end(),
              {"--device_count", "CPU=2", "--replica_device_setter", "--log_device_placement"});
  const RunResult two = RunRill(args);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  const std::optional<Tensor> w = JsonFetch(two.out, "w");
  ASSERT_TRUE(w.has_value()) << two.out;
  EXPECT_NEAR(w->data<float>()[0], 0.1, 1e-3);
  const std::string device = "/job:localhost/replica:0/task:0/device:CPU:";
  EXPECT_THAT(two.err, HasSubstr("\nw: (VariableV2): " + device + "1\n"));
  EXPECT_THAT(two.err, HasSubstr("\ntrain/update_w/ApplyGradientDescent: (ApplyGradientDescent): " +
                                 device + "1\n"));
  EXPECT_THAT(two.err, HasSubstr("\ngradients/mul_grad/Mul: (Mul): " + device + "0\n"));
  EXPECT_THAT(two.err, HasSubstr(device + "1: 6 nodes, 8 B of variables, 4 send, 3 recv\n"));
}

// A TensorFlow graph that names /device:CPU:1 needs a second device, or
// soft placement.
TEST_F(RunCommand, DevicesTheGraphNamesMustExistUnlessSoftPlacement) {
  const std::vector<std::string> args = {GraphPath("partial_device_names.pbtxt"),
                                         "--feed",
                                         "input0=3",
                                         "--feed",
                                         "input1=4",
                                         "--fetch",
                                         "Sub"};
  const RunResult missing = RunRill(args);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("Cannot assign a device for operation 'Sub'"));
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--device_count", "CPU=2"},
        std::vector<std::string>{"--allow_soft_placement"}}) {
    std::vector<std::string> with = args;
    with.insert(with.end(), extra.begin(), extra.end());
    const RunResult r = RunRill(with);
    ASSERT_EQ(r.exit_code, 0) << extra[0] << ": " << r.err;
    EXPECT_EQ(r.out, "Sub: int32 [] = -42\n");  // (3 + 4) - (3 + 4)^2
  }
}

TEST_F(RunCommand, FeedsJsonLiterals) {
  const RunResult r =
      RunRill({GraphPath("rust_addition.pb"), "--feed", "x=3", "--feed=y=-10", "--fetch", "z"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "z: int32 [] = -7\n");
}

TEST_F(RunCommand, AcceptsAnyShapeForLegacyPlaceholders) {
  // rust_multiplication.pb predates GraphDef version 22: its placeholders'
  // rank-0 shape attrs mean "any shape".
  const RunResult r = RunRill({GraphPath("rust_multiplication.pb"), "--feed", "a=[[1, 2], [3, 4]]",
                               "--feed", "b=0.5", "--fetch", "c"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "c: float32 [2,2] = [[0.5, 1], [1.5, 2]]\n");
}

TEST_F(RunCommand, FeedsNpyFiles) {
  const RunResult r = RunRill({GraphPath("rust_addition.pb"), "--feed",
                               "x=" + Npy("x.npy", Tensor::Scalar<int32_t>(40)), "--feed", "y=2",
                               "--fetch", "z:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "z:0: int32 [] = 42\n");
}

TEST_F(RunCommand, SummarizesLargeTensors) {
  std::vector<float> a(100);
  for (int i = 0; i < 100; ++i) a[i] = static_cast<float>(i);
  const RunResult r = RunRill({GraphPath("rust_multiplication.pb"), "--feed",
                               "a=" + Npy("a.npy", Tensor::FromVector<float>(a, {10, 10})),
                               "--feed", "b=2", "--fetch", "c"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "c: float32 [10,10] = [0, 2, 4, 6, 8, 10, ..., 194, 196, 198] (100 values, "
            "flattened)\n");
}

TEST_F(RunCommand, OutWritesOneNpyPerFetch) {
  const std::string out = dir_ + "/fetched";
  const RunResult r =
      RunRill({GraphPath("rust_multiplication.pb"), "--feed", "a=[1, 2, 3]", "--feed",
               "b=[2, 2, 2]", "--fetch", "c:0", "--fetch", "a", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(const Tensor c, ReadNpy(out + "/c_0.npy"));
  EXPECT_TRUE(TensorsEqual(c, Tensor::FromVector<float>({2, 4, 6}, {3}))) << c.DebugString();
  ASSERT_OK_AND_ASSIGN(const Tensor a, ReadNpy(out + "/a.npy"));
  EXPECT_TRUE(TensorsEqual(a, Tensor::FromVector<float>({1, 2, 3}, {3}))) << a.DebugString();
}

// Two constants whose names --out could turn into paths out of its
// directory: "../../x" (refused) and "link/x" (refused when "link" is a
// symbolic link).
constexpr char kPathNamedConstants[] = R"(
node { name: "../../x" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 7 } } } }
node { name: "link/x" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 8 } } } }
node { name: "link" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 9 } } } }
versions { producer: 1000 }
)";

TEST_F(RunCommand, OutRefusesNamesThatLeaveTheDirectory) {
  const std::string graph = dir_ + "/paths.pbtxt";
  std::ofstream(graph) << kPathNamedConstants;
  const std::string out = dir_ + "/a/b/out";
  for (const std::string fetch : {"../../x", "../../x:0"}) {
    const RunResult r = RunRill({graph, "--fetch", fetch, "--out", out});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--out: fetch '" + fetch + "' names no file inside " + out));
    EXPECT_THAT(r.err, HasSubstr("has an empty, '.' or '..' part"));
    EXPECT_EQ(r.out, "");
  }
  // Nothing was written anywhere: not in DIR, nor where "../../x" leads.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/a"));
  const RunResult ok = RunRill({graph, "--fetch", "link/x", "--out", out});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  ASSERT_OK_AND_ASSIGN(const Tensor x, ReadNpy(out + "/link/x.npy"));
  EXPECT_TRUE(TensorsEqual(x, Tensor::Scalar<int32_t>(8)));
}

// A graph whose one constant is a million floats, filled from one value.
constexpr char kMillionFloats[] = R"pb(
  node {
    name: "big"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape { dim { size: 1000000 } }
          float_val: 1
        }
      }
    }
  }
)pb";

TEST_F(RunCommand, MaxTensorBytesRefusesLargerTensorsNamingTheNode) {
  const std::string graph = dir_ + "/big.pbtxt";
  std::ofstream(graph) << kMillionFloats;
  const RunResult limited = RunRill({graph, "--fetch", "big", "--max_tensor_bytes", "1000000"});
  EXPECT_EQ(limited.exit_code, 1) << limited.err;
  EXPECT_THAT(limited.err, HasSubstr("'big'"));
  EXPECT_THAT(limited.err, HasSubstr("4000000 bytes"));
  const RunResult roomy = RunRill({graph, "--fetch", "big", "--max_tensor_bytes", "4000000"});
  EXPECT_EQ(roomy.exit_code, 0) << roomy.err;
  const RunResult zero = RunRill({graph, "--fetch", "big", "--max_tensor_bytes", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.err, HasSubstr("--max_tensor_bytes must be a positive number of bytes"));
}

TEST_F(RunCommand, OutFollowsNoSymbolicLinkInsideTheDirectory) {
  const std::string graph = dir_ + "/paths.pbtxt";
  std::ofstream(graph) << kPathNamedConstants;
  const std::string out = dir_ + "/out";
  const std::string elsewhere = dir_ + "/elsewhere";
  std::filesystem::create_directories(out);
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_directory_symlink(elsewhere, out + "/link");
  std::filesystem::create_symlink(elsewhere + "/victim.npy", out + "/link.npy");
  for (const std::string fetch : {"link/x", "link"}) {
    const RunResult r = RunRill({graph, "--fetch", fetch, "--out", out});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("it is a symbolic link, which is not followed"));
  }
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
}

TEST_F(RunCommand, JsonPrintsEveryFetchOnceInOneObject) {
  const RunResult r =
      RunRill({GraphPath("rust_multiplication.pb"), "--feed", "a=[[0.1], [2]]", "--feed", "b=3",
               "--fetch", "c", "--fetch", "b", "--fetch", "c", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"c": {"dtype": "float32", "shape": [2, 1], "values": [0.3, 6]}, )"
                   R"("b": {"dtype": "float32", "shape": [], "values": [3]}})"
                   "\n");
  const std::optional<Tensor> c = JsonFetch(r.out, "c");
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(TensorsEqual(*c, Tensor::FromVector<float>({0.1f * 3, 6}, {2, 1})));
}

TEST_F(RunCommand, RunsInitOnceAndTargetsEveryStep) {
  const std::string graph = dir_ + "/counter.pbtxt";
  std::ofstream(graph) << R"(
node { name: "v" op: "VariableV2"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "shape" value { shape {} } } }
node { name: "zero" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "one" op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } } }
node { name: "init" op: "Assign" input: "v" input: "zero"
  attr { key: "T" value { type: DT_INT32 } } }
node { name: "inc" op: "AssignAdd" input: "v" input: "one"
  attr { key: "T" value { type: DT_INT32 } } }
versions { producer: 1000 }
)";
  const RunResult r =
      RunRill({graph, "--init", "init", "--target", "inc", "--steps", "5", "--fetch", "v"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "v: int32 [] = 5\n");
}

TEST_F(RunCommand, UnknownFetchFailsWithTheSessionsMessage) {
  const RunResult r =
      RunRill({GraphPath("rust_addition.pb"), "--feed", "x=1", "--feed", "y=2", "--fetch", "nope"});
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nope"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(RunCommand, UsageErrorsExitTwo) {
  const std::string graph = GraphPath("rust_addition.pb");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{graph, "--feed", "x", "--fetch", "z"}, "--feed 'x': expected NAME=FILE.npy or NAME=JSON"},
      {{graph, "--feed", "=3", "--fetch", "z"}, "expected NAME=FILE.npy"},
      {{graph, "--fetch"}, "--fetch needs a value"},
      {{graph, "--fetch", "z", "--steps", "0"}, "--steps '0'"},
      {{graph, "--fetch", "z", "--steps", "2x"}, "--steps '2x'"},
      {{graph, "--fetch", "z", "--bogus"}, "unknown option '--bogus'"},
      {{"--fetch", "z"}, "missing GRAPH"},
      {{graph}, "nothing to run"},
      {{graph, "--fetch", "z", "--device_count", "CPU=0"}, "--device_count 'CPU=0'"},
      {{graph, "--fetch", "z", "--device_count", "TPU=1"}, "--device_count 'TPU=1'"},
      {{graph, "--fetch", "z", "--ps_strategy", "greedy"}, "--ps_strategy needs"},
      {{graph, "--fetch", "z", "--replica_device_setter", "--ps_strategy", "x"},
       "unknown ps strategy 'x'"},
  };
  for (const auto& [args, message] : cases) {
    const RunResult r = RunRill(args);
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_THAT(r.err, HasSubstr("usage: rill run GRAPH"));
  }
}

TEST_F(RunCommand, BadFeedsFailNamingTheProblem) {
  const std::string graph = GraphPath("rust_addition.pb");
  const std::string float_npy = Npy("f.npy", Tensor::Scalar<float>(1.5f));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--feed", "x=" + dir_ + "/missing.npy"}, "missing.npy: cannot open"},
      {{"--feed", "x=" + float_npy}, "f.npy holds float32, but x:0 is int32"},
      {{"--feed", "x=3000000000"}, "3000000000 is out of range for int32"},
      {{"--feed", "x=1.5"}, "1.5 is not an integer"},
      {{"--feed", "x=[1, 2]"},
       "Cannot feed value of shape [2] for Tensor 'x:0', which has shape '[]'"},
      {{"--feed", "x=[1,"}, "--feed x: '[1,' as int32: at byte offset 3"},
      {{"--feed", "q=1"}, "--feed q: no node 'q' in the graph"},
      {{"--feed", "x:1=1"}, "node 'x' (Placeholder) has 1 output(s)"},
  };
  for (const auto& [feed, message] : cases) {
    std::vector<std::string> args = {graph};
    args.insert(args.end(), feed.begin(), feed.end());
    args.insert(args.end(), {"--feed", "y=1", "--fetch", "z"});
    const RunResult r = RunRill(args);
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 1) << message << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
}

// A FIFO would never end (and opening one waits for a writer): it is
// refused before it is read.
TEST_F(RunCommand, FeedFromAFifoIsRefused) {
  const std::string fifo = dir_ + "/x.npy";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const RunResult r = RunRill(
      {GraphPath("rust_addition.pb"), "--feed", "x=" + fifo, "--feed", "y=1", "--fetch", "z"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--feed x: cannot open '" + fifo + "': a FIFO, not a regular file"));
}

TEST_F(RunCommand, TruncatedNpyFeedIsRefusedNamingTheSizes) {
  ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeNpy(Tensor::FromVector<int32_t>({1, 2}, {2})));
  bytes.resize(bytes.size() - 3);
  const std::string path = dir_ + "/short.npy";
  std::ofstream(path, std::ios::binary) << bytes;
  const RunResult r = RunRill(
      {GraphPath("rust_addition.pb"), "--feed", "x=" + path, "--feed", "y=1", "--fetch", "z"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("short.npy: truncated npy data: shape (2,) of '<i4' needs 8 bytes "
                               "from byte offset 128, but the input ends at byte offset 133"));
}

TEST_F(RunCommand, MissingGraphFileFails) {
  const RunResult r = RunRill({dir_ + "/none.pb", "--fetch", "z"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("none.pb"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

std::string CheckpointPath(const std::string& name) {
  return testing::TestDataDir() + "/tf_checkpoints/regression-model/" + name;
}

// TensorFlow's checkpoint restores through the graph's own saver nodes,
// for a GraphDef (found by name) and for a SavedModel's meta graph (its
// SaverDef, a sharded saver).
TEST_F(RunCommand, RestoresTensorFlowsCheckpointThroughTheGraphsSaver) {
  for (const std::string& graph :
       {GraphPath("rust_regression_ckpt.pb"), CheckpointPath("saved_model.pb")}) {
    const RunResult r = RunRill({graph, "--restore", CheckpointPath("variables/variables"),
                                 "--fetch", "w", "--fetch", "b", "--json"});
    ASSERT_EQ(r.exit_code, 0) << graph << ": " << r.err;
    const std::optional<Tensor> w = JsonFetch(r.out, "w");
    const std::optional<Tensor> b = JsonFetch(r.out, "b");
    ASSERT_TRUE(w.has_value() && b.has_value()) << r.out;
    EXPECT_FLOAT_EQ(w->data<float>()[0], -0.8578622f);
    EXPECT_FLOAT_EQ(b->data<float>()[0], 0.f);
    EXPECT_THAT(r.err, HasSubstr("restored " + CheckpointPath("variables/variables")));
  }
}

// Trained weights saved by one run are what the next run restores (from
// the directory's newest checkpoint); the SavedModel's sharded saver
// writes the same index bytes as TensorFlow did.
TEST_F(RunCommand, SavesAndRestoresAcrossRuns) {
  const RunResult train =
      RunRill({GraphPath("rust_regression_ckpt.pb"), "--feed", "x=" + Npy("x.npy", RegressionXs()),
               "--feed", "y=" + Npy("y.npy", RegressionYs()), "--init", "init", "--target", "train",
               "--steps", "201", "--fetch", "w", "--json", "--save", dir_ + "/run/model.ckpt"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const std::optional<Tensor> trained = JsonFetch(train.out, "w");
  ASSERT_TRUE(trained.has_value()) << train.out;
  const RunResult restored = RunRill(
      {GraphPath("rust_regression_ckpt.pb"), "--restore", dir_ + "/run", "--fetch", "w", "--json"});
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_EQ(JsonFetch(restored.out, "w")->data<float>()[0], trained->data<float>()[0]);

  const RunResult resaved =
      RunRill({CheckpointPath("saved_model.pb"), "--restore", CheckpointPath("variables/variables"),
               "--save", dir_ + "/copy/variables"});
  ASSERT_EQ(resaved.exit_code, 0) << resaved.err;
  EXPECT_EQ(testing::ReadFileOrDie(dir_ + "/copy/variables.index"),
            testing::ReadFileOrDie(CheckpointPath("variables/variables.index")));
}

// `--save /` would write "/.index" and "/checkpoint"; `--save DIR` the
// files beside DIR: refused, naming the prefix.
TEST_F(RunCommand, SaveRefusesPrefixesThatNameNoFile) {
  for (const std::string& prefix : {std::string("/"), dir_, dir_ + "/", std::string("/dev/full")}) {
    const RunResult r =
        RunRill({GraphPath("rust_regression_ckpt.pb"), "--init", "init", "--save", prefix});
    EXPECT_EQ(r.exit_code, 1) << prefix;
    EXPECT_THAT(r.err, HasSubstr("checkpoint prefix '" + prefix + "'"));
  }
  EXPECT_FALSE(std::filesystem::exists("/.index"));
  EXPECT_FALSE(std::filesystem::exists("/checkpoint"));
}

TEST_F(RunCommand, RestoreErrorsNameWhatIsMissing) {
  RunResult r = RunRill({GraphPath("rust_regression.pb"), "--restore",
                         CheckpointPath("variables/variables"), "--fetch", "w"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("the graph has no saver"));
  r = RunRill(
      {GraphPath("rust_regression_ckpt.pb"), "--restore", dir_ + "/nothing", "--fetch", "w"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nothing.index"));
  r = RunRill({GraphPath("rust_regression_ckpt.pb"), "--restore", dir_, "--fetch", "w"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("lists no checkpoint"));
}

}  // namespace
}  // namespace rill
