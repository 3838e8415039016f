// Runs `rill place` (the real binary, RILL_BIN) as a user would.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph_io.h"
#include "gtest/gtest.h"
#include "runtime/training/meta_graph.h"
#include "runtime/training/saver.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kCluster[] = "ps=127.0.0.1:2222,127.0.0.1:2223;worker=127.0.0.1:2224";
constexpr char kWorker[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kPs0[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kPs1[] = "/job:ps/replica:0/task:1/device:CPU:0";

testing::ProgramResult RunPlace(std::vector<std::string> args) {
  args.insert(args.begin(), {std::getenv("RILL_BIN"), "place"});
  return testing::RunProgram(args);
}

std::string GraphPath(const std::string& name) {
  return testing::TestDataDir() + "/tf_graphs/" + name;
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The "name: (Op): device" lines of the output, by node name.
std::map<std::string, std::string> DevicesByNode(const std::string& out) {
  std::map<std::string, std::string> devices;
  const std::regex line(R"(^(\S+): \((\w+)\): (/\S+)$)");
  std::istringstream in(out);
  for (std::string text; std::getline(in, text);) {
    std::smatch match;
    if (std::regex_match(text, match, line)) devices[match[1]] = match[3];
  }
  return devices;
}

// (sending device, tensor, receiving device, tensor_name) of every send
// line and of every recv line, the device being the section's.
using Transfer = std::tuple<std::string, std::string, std::string, std::string>;
struct Transfers {
  std::set<Transfer> sends;
  std::set<Transfer> recvs;
  int send_lines = 0;
  int recv_lines = 0;
};

Transfers ParseTransfers(const std::string& out) {
  Transfers t;
  const std::regex header(R"(^(/job:\S+):$)");
  const std::regex send(R"(^  send (\S+) -> (\S+) \((\S+)\)$)");
  const std::regex recv(R"(^  recv (\S+) <- (\S+) \((\S+)\)$)");
  std::string section;
  std::istringstream in(out);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (std::regex_match(text, m, header)) {
      section = m[1];
    } else if (std::regex_match(text, m, send)) {
      t.sends.emplace(section, m[1], m[2], m[3]);
      ++t.send_lines;
    } else if (std::regex_match(text, m, recv)) {
      t.recvs.emplace(m[2], m[1], section, m[3]);
      ++t.recv_lines;
    }
  }
  return t;
}

class PlaceCommand : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }
  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(PlaceCommand, ReplicaDeviceSetterPutsVariablesOnPsTasksAndTheRestOnTheWorker) {
  const testing::ProgramResult r = RunPlace(
      {GraphPath("rust_regression_ckpt.pb"), "--cluster", kCluster, "--replica_device_setter"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::map<std::string, std::string> devices = DevicesByNode(r.out);
  ASSERT_OK_AND_ASSIGN(const GraphDef def, ReadGraphDef(GraphPath("rust_regression_ckpt.pb")));
  ASSERT_EQ(devices.size(), static_cast<size_t>(def.node_size())) << r.out;

  const std::string& w = devices.at("w");
  const std::string& b = devices.at("b");
  EXPECT_THAT(w, StartsWith("/job:ps/replica:0/task:"));
  EXPECT_THAT(b, StartsWith("/job:ps/replica:0/task:"));
  EXPECT_NE(w, b);
  EXPECT_EQ(std::set<std::string>({w, b}), std::set<std::string>({kPs0, kPs1}));

  // A variable's updates and its read (colocated by `_class`) go with it.
  std::set<std::string> on_ps = {"w", "b", "w/read", "b/read"};
  EXPECT_EQ(devices.at("w/read"), w);
  EXPECT_EQ(devices.at("b/read"), b);
  int updates = 0;
  for (const NodeDef& node : def.node()) {
    if (node.op() != "Assign" && node.op() != "ApplyGradientDescent") continue;
    ++updates;
    on_ps.insert(node.name());
    EXPECT_EQ(devices.at(node.name()), devices.at(node.input(0))) << node.name();
  }
  EXPECT_EQ(updates, 6);
  for (const auto& [name, device] : devices) {
    if (on_ps.count(name) == 0) {
      EXPECT_EQ(device, kWorker) << name;
    }
  }

  EXPECT_THAT(r.out, HasSubstr(std::string(kPs0) + ": 5 nodes, 4 B of variables\n"));
  EXPECT_THAT(r.out, HasSubstr(std::string(kPs1) + ": 5 nodes, 4 B of variables\n"));
  EXPECT_THAT(r.out, HasSubstr(std::string(kWorker) + ": 99 nodes, 0 B of variables\n"));
}

// A .meta file (written by rill) and a SavedModel (TensorFlow's) are placed
// as the graph they hold.
TEST_F(PlaceCommand, PlacesTheGraphOfAMetaFileAndOfASavedModel) {
  ASSERT_OK_AND_ASSIGN(const GraphDef def, ReadGraphDef(GraphPath("rust_regression_ckpt.pb")));
  ASSERT_OK_AND_ASSIGN(const SaverDef saver, FindSaverDef(def));
  const std::string meta = dir_ + "/model.ckpt-1.meta";
  ASSERT_OK(WriteMetaGraph(meta, MakeMetaGraph(def, &saver)));
  const std::vector<std::string> flags = {"--cluster", kCluster, "--replica_device_setter",
                                          "--partition"};
  std::vector<std::string> args = {GraphPath("rust_regression_ckpt.pb")};
  args.insert(args.end(), flags.begin(), flags.end());
  const testing::ProgramResult from_graph = RunPlace(args);
  ASSERT_EQ(from_graph.exit_code, 0) << from_graph.err;
  args[0] = meta;
  const testing::ProgramResult from_meta = RunPlace(args);
  ASSERT_EQ(from_meta.exit_code, 0) << from_meta.err;
  EXPECT_EQ(from_meta.out, from_graph.out);

  args[0] = testing::TestDataDir() + "/tf_checkpoints/regression-model/saved_model.pb";
  const testing::ProgramResult from_saved_model = RunPlace(args);
  ASSERT_EQ(from_saved_model.exit_code, 0) << from_saved_model.err;
  const std::map<std::string, std::string> devices = DevicesByNode(from_saved_model.out);
  ASSERT_TRUE(devices.count("w") && devices.count("b")) << from_saved_model.out;
  EXPECT_EQ(std::set<std::string>({devices.at("w"), devices.at("b")}),
            std::set<std::string>({kPs0, kPs1}));
}

TEST_F(PlaceCommand, PartitionShowsMatchingSendRecvPairs) {
  const testing::ProgramResult r = RunPlace({GraphPath("rust_regression_ckpt.pb"), "--cluster",
                                             kCluster, "--replica_device_setter", "--partition"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::map<std::string, std::string> devices = DevicesByNode(r.out);
  const std::string& w = devices.at("w");
  const std::string& b = devices.at("b");

  const Transfers t = ParseTransfers(r.out);
  EXPECT_GT(t.send_lines, 0) << r.out;
  EXPECT_EQ(t.send_lines, static_cast<int>(t.sends.size()));
  EXPECT_EQ(t.recv_lines, static_cast<int>(t.recvs.size()));
  EXPECT_EQ(t.sends, t.recvs) << r.out;
  // The variables' values to the worker's model, the learning rate and
  // gradients to the ps tasks, and the initializers' completion to `init`.
  const auto sent = [&](const std::string& from, const std::string& tensor, const std::string& to) {
    return std::any_of(t.sends.begin(), t.sends.end(), [&](const Transfer& x) {
      return std::get<0>(x) == from && std::get<1>(x) == tensor && std::get<2>(x) == to;
    });
  };
  EXPECT_TRUE(sent(w, "w/read:0", kWorker)) << r.out;
  EXPECT_TRUE(sent(b, "b/read:0", kWorker)) << r.out;
  EXPECT_TRUE(sent(kWorker, "train/learning_rate:0", w)) << r.out;
  EXPECT_TRUE(sent(kWorker, "train/learning_rate:0", b)) << r.out;
  EXPECT_TRUE(sent(w, "^w/Assign", kWorker)) << r.out;
  EXPECT_TRUE(sent(b, "^b/Assign", kWorker)) << r.out;
  for (const Transfer& x : t.sends) {
    EXPECT_NE(std::get<0>(x), std::get<2>(x)) << std::get<1>(x);
    EXPECT_THAT(std::get<3>(x), StartsWith("edge_"));
  }

  const std::regex summary(R"((/job:\S+): \d+ nodes?, \d+ B of variables, (\d+) send, (\d+) recv)");
  int summarized_sends = 0;
  int summarized_recvs = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), summary), end; it != end; ++it) {
    summarized_sends += std::stoi((*it)[2]);
    summarized_recvs += std::stoi((*it)[3]);
  }
  EXPECT_EQ(summarized_sends, t.send_lines) << r.out;
  EXPECT_EQ(summarized_recvs, t.recv_lines) << r.out;
}

TEST_F(PlaceCommand, GreedyStrategySpreadsTheVariables) {
  const testing::ProgramResult r =
      RunPlace({GraphPath("rust_regression_ckpt.pb"), "--cluster", kCluster,
                "--replica_device_setter", "--ps_strategy=greedy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::map<std::string, std::string> devices = DevicesByNode(r.out);
  EXPECT_EQ(std::set<std::string>({devices.at("w"), devices.at("b")}),
            std::set<std::string>({kPs0, kPs1}));
}

// The spelling with dashes, which earlier releases documented, is the
// same flag.
TEST_F(PlaceCommand, FlagsMaySpellTheirNamesWithDashes) {
  const std::vector<std::string> graph = {GraphPath("rust_regression_ckpt.pb"), "--cluster",
                                          kCluster};
  std::vector<std::string> underscores = graph;
  underscores.insert(underscores.end(),
                     {"--replica_device_setter", "--ps_strategy=greedy", "--allow_soft_placement"});
  std::vector<std::string> dashes = graph;
  dashes.insert(dashes.end(),
                {"--replica-device-setter", "--ps-strategy=greedy", "--allow-soft-placement"});
  const testing::ProgramResult with_underscores = RunPlace(underscores);
  ASSERT_EQ(with_underscores.exit_code, 0) << with_underscores.err;
  const testing::ProgramResult with_dashes = RunPlace(dashes);
  ASSERT_EQ(with_dashes.exit_code, 0) << with_dashes.err;
  EXPECT_EQ(with_dashes.out, with_underscores.out);
}

TEST_F(PlaceCommand, WithoutAClusterPlacesOnThisProcess) {
  const testing::ProgramResult r = RunPlace({GraphPath("rust_addition.pb")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "x: (Placeholder): /job:localhost/replica:0/task:0/device:CPU:0\n"
            "y: (Placeholder): /job:localhost/replica:0/task:0/device:CPU:0\n"
            "z: (AddV2): /job:localhost/replica:0/task:0/device:CPU:0\n"
            "\n"
            "/job:localhost/replica:0/task:0/device:CPU:0: 3 nodes, 0 B of variables\n");
}

TEST_F(PlaceCommand, PartitionOfOneDeviceSendsNothing) {
  const testing::ProgramResult r = RunPlace({GraphPath("rust_addition.pb"), "--partition"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(": 3 nodes, 0 B of variables, 0 send, 0 recv\n"));
  EXPECT_THAT(r.out, HasSubstr("no tensor crosses devices"));
}

TEST_F(PlaceCommand, ExplainGivesAReasonForEveryNode) {
  const testing::ProgramResult r = RunPlace({GraphPath("rust_regression_ckpt.pb"), "--cluster",
                                             kCluster, "--replica_device_setter", "--explain"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(R"(^(\S+): \((\w+)\): (/\S+)  <- .+$)");
  int explained = 0;
  std::istringstream in(r.out);
  for (std::string text; std::getline(in, text);) explained += std::regex_match(text, line);
  ASSERT_OK_AND_ASSIGN(const GraphDef def, ReadGraphDef(GraphPath("rust_regression_ckpt.pb")));
  EXPECT_EQ(explained, def.node_size()) << r.out;
}

TEST_F(PlaceCommand, DotWritesAGraphvizFile) {
  const std::string path = dir_ + "/placement.dot";
  const testing::ProgramResult r =
      RunPlace({GraphPath("rust_regression_ckpt.pb"), "--cluster", kCluster,
                "--replica_device_setter", "--partition", "--dot", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dot = testing::ReadFileOrDie(path);
  EXPECT_THAT(dot, StartsWith("digraph "));
  EXPECT_THAT(dot, HasSubstr(kPs1));
  EXPECT_THAT(dot, HasSubstr("_Recv"));
  if (access("/usr/bin/dot", X_OK) != 0)
    return;  // The file's syntax is checked only with Graphviz.
  const testing::ProgramResult rendered =
      testing::RunProgram({"/usr/bin/dot", "-Tsvg", path, "-o", dir_ + "/placement.svg"});
  EXPECT_EQ(rendered.exit_code, 0) << rendered.err;
  EXPECT_THAT(testing::ReadFileOrDie(dir_ + "/placement.svg"), HasSubstr("<svg"));
}

TEST_F(PlaceCommand, UnwritableDotFileIsARuntimeError) {
  const testing::ProgramResult r =
      RunPlace({GraphPath("rust_addition.pb"), "--dot", dir_ + "/no/such/dir/p.dot"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no/such/dir/p.dot"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

TEST_F(PlaceCommand, MissingGraphFileIsARuntimeError) {
  const testing::ProgramResult r = RunPlace({dir_ + "/missing.pb", "--cluster", kCluster});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("rill place: "));
  EXPECT_THAT(r.err, HasSubstr("missing.pb"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(PlaceCommand, BadClusterStringsAreUsageErrorsNamingTheEntry) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ps=127.0.0.1", "'127.0.0.1'"},
      {"ps=127.0.0.1:0", "'127.0.0.1:0'"},
      {"ps=127.0.0.1:65536", "'127.0.0.1:65536'"},
      {"ps=host:port", "'host:port'"},
      {"ps=:2222", "':2222'"},
      {"ps=h:1,,h:2", "''"},
      {"ps127.0.0.1:2222", "'ps127.0.0.1:2222'"},
      {"=h:1", "''"},
      {"p s=h:1", "'p s'"},
      {"ps=h:1;ps=h:2", "'ps'"},
      {"ps=h:1;", "''"},
      {"", "''"},
      {"worker=1:h:1", "'worker'"},
  };
  for (const auto& [cluster, named] : cases) {
    const testing::ProgramResult r =
        RunPlace({GraphPath("rust_addition.pb"), "--cluster", cluster});
    EXPECT_EQ(r.exit_code, 2) << cluster;
    EXPECT_THAT(r.err, StartsWith("rill place: --cluster")) << cluster;
    const std::string first_line = r.err.substr(0, r.err.find('\n'));
    EXPECT_THAT(first_line, HasSubstr(named)) << cluster << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("usage: rill place")) << cluster;
  }
}

// The devices need not exist: a machine without GPUs plans for them, with
// the kernels a GPU build has.
TEST_F(PlaceCommand, DeviceCountPlansForGpusThisMachineNeedNotHave) {
  const testing::ProgramResult local =
      RunPlace({GraphPath("rust_regression_ckpt.pb"), "--device_count", "CPU=1,GPU=2"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const std::map<std::string, std::string> devices = DevicesByNode(local.out);
  const std::string gpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
  const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  EXPECT_EQ(devices.at("w"), gpu0);
  EXPECT_EQ(devices.at("mul"), gpu0);
  // TensorFlow has no GPU kernel for checkpoints.
  EXPECT_EQ(devices.at("save/SaveV2"), cpu0);

  const testing::ProgramResult cluster =
      RunPlace({GraphPath("rust_regression_ckpt.pb"), "--cluster", kCluster,
                "--replica_device_setter", "--device_count", "GPU=1"});
  ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  EXPECT_EQ(DevicesByNode(cluster.out).at("mul"), "/job:worker/replica:0/task:0/device:GPU:0");
}

TEST_F(PlaceCommand, UsageErrors) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {GraphPath("rust_addition.pb"), GraphPath("rust_addition.pb")},
      {GraphPath("rust_addition.pb"), "--bogus"},
      {GraphPath("rust_addition.pb"), "--replica_device_setter"},
      {GraphPath("rust_addition.pb"), "--cluster", "worker=h:1", "--replica_device_setter"},
      {GraphPath("rust_addition.pb"), "--cluster", kCluster, "--ps_strategy=greedy"},
      {GraphPath("rust_addition.pb"), "--cluster", kCluster, "--replica_device_setter",
       "--ps_strategy=nearest"},
      {GraphPath("rust_addition.pb"), "--device_count", "TPU=1"},
      {GraphPath("rust_addition.pb"), "--device_count", "GPU=x"},
      {GraphPath("rust_addition.pb"), "--cluster", kCluster, "--device_count", "CPU=2"},
  };
  for (const std::vector<std::string>& args : cases) {
    const testing::ProgramResult r = RunPlace(args);
    const std::string joined = ::testing::PrintToString(args);
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_THAT(r.err, StartsWith("rill place: ")) << joined;
    EXPECT_THAT(r.err, HasSubstr("usage: rill place")) << joined;
  }
}

TEST_F(PlaceCommand, UnplaceableGraphIsARuntimeError) {
  // Without soft placement a request for a device the cluster lacks fails.
  const std::string path = dir_ + "/gpu.pbtxt";
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(GraphPath("rust_addition.pb")));
  for (NodeDef& node : *def.mutable_node()) node.set_device("/job:worker/task:0/device:GPU:0");
  ASSERT_OK(WriteGraphDef(def, path, GraphFormat::kText));
  const testing::ProgramResult r = RunPlace({path, "--cluster", "worker=h:1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Cannot assign a device for operation"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;

  const testing::ProgramResult soft =
      RunPlace({path, "--cluster", "worker=h:1", "--allow_soft_placement"});
  ASSERT_EQ(soft.exit_code, 0) << soft.err;
  EXPECT_THAT(soft.out, HasSubstr("z: (AddV2): /job:worker/replica:0/task:0/device:CPU:0\n"));
}

}  // namespace
}  // namespace rill
