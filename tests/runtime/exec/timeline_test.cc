// Timeline: the Chrome trace of a made-up step (tracks, flows, counters,
// clocks) and of a real step of one ps and two workers.
#include "runtime/exec/timeline.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using ::rill::testing::QuietLog;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// The trace's events, checked against what the Trace Event Format asks of
// each phase used.
struct Trace {
  std::vector<Struct> events;
  Struct other;

  std::vector<const Struct*> Phase(const std::string& ph) const {
    std::vector<const Struct*> out;
    for (const Struct& event : events) {
      if (event.fields().at("ph").string_value() == ph) out.push_back(&event);
    }
    return out;
  }
  // Process names by pid, track names by (pid, tid).
  std::map<int, std::string> Processes() const {
    std::map<int, std::string> names;
    for (const Struct* m : Phase("M")) {
      if (Str(*m, "name") != "process_name") continue;
      names[Int(*m, "pid")] =
          m->fields().at("args").struct_value().fields().at("name").string_value();
    }
    return names;
  }
  std::map<std::pair<int, int>, std::string> Tracks() const {
    std::map<std::pair<int, int>, std::string> names;
    for (const Struct* m : Phase("M")) {
      if (Str(*m, "name") != "thread_name") continue;
      names[{Int(*m, "pid"), Int(*m, "tid")}] =
          m->fields().at("args").struct_value().fields().at("name").string_value();
    }
    return names;
  }

  static std::string Str(const Struct& s, const std::string& key) {
    return s.fields().at(key).string_value();
  }
  static int Int(const Struct& s, const std::string& key) {
    return static_cast<int>(s.fields().at(key).number_value());
  }
  static double Num(const Struct& s, const std::string& key) {
    return s.fields().at(key).number_value();
  }
};

bool Has(const Struct& s, const std::string& key, Value::KindCase kind) {
  const auto it = s.fields().find(key);
  return it != s.fields().end() && it->second.kind_case() == kind;
}

Trace Parse(const std::string& json) {
  Struct root;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &root);
  EXPECT_TRUE(status.ok()) << status.message() << "\n" << json;
  Trace trace;
  if (!status.ok()) return trace;
  EXPECT_TRUE(Has(root, "traceEvents", Value::kListValue));
  EXPECT_TRUE(Has(root, "displayTimeUnit", Value::kStringValue));
  EXPECT_TRUE(Has(root, "otherData", Value::kStructValue));
  trace.other = root.fields().at("otherData").struct_value();
  for (const Value& value : root.fields().at("traceEvents").list_value().values()) {
    EXPECT_EQ(value.kind_case(), Value::kStructValue);
    const Struct& event = value.struct_value();
    EXPECT_TRUE(Has(event, "ph", Value::kStringValue));
    EXPECT_TRUE(Has(event, "pid", Value::kNumberValue));
    EXPECT_TRUE(Has(event, "tid", Value::kNumberValue));
    EXPECT_TRUE(Has(event, "name", Value::kStringValue));
    const std::string ph = event.fields().at("ph").string_value();
    EXPECT_THAT((std::set<std::string>{"X", "M", "s", "f", "C"}), Contains(ph));
    if (ph == "M") {
      EXPECT_TRUE(Has(event, "args", Value::kStructValue));
    } else {
      EXPECT_TRUE(Has(event, "ts", Value::kNumberValue));
      EXPECT_GE(Trace::Num(event, "ts"), 0);
    }
    if (ph == "X") {
      EXPECT_TRUE(Has(event, "dur", Value::kNumberValue));
      EXPECT_GE(Trace::Num(event, "dur"), 0);
      EXPECT_TRUE(Has(event, "cat", Value::kStringValue));
    }
    if (ph == "s" || ph == "f") {
      EXPECT_TRUE(Has(event, "id", Value::kNumberValue));
      EXPECT_TRUE(Has(event, "cat", Value::kStringValue));
    }
    if (ph == "C") {
      EXPECT_TRUE(Has(event, "args", Value::kStructValue));
      if (!Has(event, "args", Value::kStructValue)) continue;
      for (const auto& [key, arg] : event.fields().at("args").struct_value().fields()) {
        EXPECT_EQ(arg.kind_case(), Value::kNumberValue) << key;
      }
    }
    trace.events.push_back(event);
  }
  return trace;
}

// Within one track, slices follow one another without overlapping.
void ExpectTracksMonotone(const Trace& trace) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const Struct* x : trace.Phase("X")) {
    tracks[{Trace::Int(*x, "pid"), Trace::Int(*x, "tid")}].emplace_back(Trace::Num(*x, "ts"),
                                                                        Trace::Num(*x, "dur"));
  }
  for (const auto& [track, slices] : tracks) {
    for (size_t i = 1; i < slices.size(); ++i) {
      EXPECT_GE(slices[i].first, slices[i - 1].first + slices[i - 1].second)
          << "track " << track.first << "/" << track.second << " slice " << i;
    }
  }
}

// Every flow starts at a send's slice and finishes at a receive's, by id.
void ExpectFlowsJoinSendsToReceives(const Trace& trace) {
  // (pid, tid, ts) -> the ops of the slices that start there.
  std::map<std::tuple<int, int, double>, std::set<std::string>> slice_ops;
  for (const Struct* x : trace.Phase("X")) {
    slice_ops[{Trace::Int(*x, "pid"), Trace::Int(*x, "tid"), Trace::Num(*x, "ts")}].insert(
        Trace::Str(*x, "cat"));
  }
  std::map<int, std::string> starts;
  for (const Struct* s : trace.Phase("s")) {
    EXPECT_THAT((slice_ops[{Trace::Int(*s, "pid"), Trace::Int(*s, "tid"), Trace::Num(*s, "ts")}]),
                Contains("_Send"));
    starts[Trace::Int(*s, "id")] = Trace::Str(*s, "name");
  }
  std::set<int> finished;
  for (const Struct* f : trace.Phase("f")) {
    EXPECT_THAT((slice_ops[{Trace::Int(*f, "pid"), Trace::Int(*f, "tid"), Trace::Num(*f, "ts")}]),
                Contains("_Recv"));
    EXPECT_TRUE(starts.contains(Trace::Int(*f, "id")));
    finished.insert(Trace::Int(*f, "id"));
  }
  EXPECT_EQ(finished.size(), starts.size());
}

NodeExecStats Node(std::string name, std::string op, std::string device, int64_t start,
                   int64_t end) {
  NodeExecStats node;
  node.node_name = std::move(name);
  node.op = std::move(op);
  node.device = std::move(device);
  node.start_micros = start;
  node.end_micros = end;
  return node;
}

TEST(Timeline, OverlappingNodesGetTracksOfTheirOwnAndSendsFlowToReceives) {
  constexpr char kPs[] = "/job:ps/replica:0/task:0/device:CPU:0";
  constexpr char kWorker[] = "/job:worker/replica:0/task:0/device:CPU:0";
  RunMetadata metadata;
  metadata.step_stats.push_back(Node("a", "MatMul", kWorker, 1'000'100, 1'000'300));
  metadata.step_stats.push_back(Node("b", "Relu", kWorker, 1'000'150, 1'000'200));
  metadata.step_stats.push_back(Node("c", "Add", kWorker, 1'000'300, 1'000'400));
  NodeExecStats send = Node("send", "_Send", kPs, 1'000'000, 1'000'010);
  send.tensor_name = "w:0";
  send.peer_device = kWorker;
  send.memory_in_use = 4096;
  NodeExecStats recv = Node("recv", "_Recv", kWorker, 1'000'005, 1'000'050);
  recv.tensor_name = "w:0";
  recv.peer_device = kPs;
  recv.memory_in_use = 8192;
  metadata.step_stats.push_back(send);
  metadata.step_stats.push_back(recv);
  // A receive of another edge has no flow.
  NodeExecStats stray = Node("stray", "_Recv", kWorker, 1'000'060, 1'000'070);
  stray.tensor_name = "other:0";
  stray.peer_device = kPs;
  metadata.step_stats.push_back(stray);
  metadata.step_stats.push_back(Node("quote\"d\x01", "Op\\", kWorker, 1'000'500, 1'000'510));
  metadata.task_clocks.push_back(TaskClock{"/job:ps/replica:0/task:0", 250, 40});

  const Trace trace = Parse(Timeline(metadata).ToChromeTrace());
  EXPECT_THAT(trace.Phase("X"), SizeIs(7));
  const std::map<int, std::string> processes = trace.Processes();
  ASSERT_THAT(processes, SizeIs(2));
  EXPECT_THAT(processes.at(1), HasSubstr("/job:ps/replica:0/task:0 (clock +250 us"));
  EXPECT_THAT(processes.at(1), HasSubstr("network 40 us"));
  EXPECT_THAT(processes.at(2), HasSubstr("/job:worker/replica:0/task:0 (the clock of this trace)"));
  // b overlaps a: the worker's CPU needs a second track.
  const auto tracks = trace.Tracks();
  EXPECT_EQ(tracks.at({2, 1}), "/device:CPU:0");
  EXPECT_EQ(tracks.at({2, 2}), "/device:CPU:0 #2");
  EXPECT_THAT(tracks, SizeIs(3));
  ExpectTracksMonotone(trace);
  ExpectFlowsJoinSendsToReceives(trace);
  EXPECT_THAT(trace.Phase("s"), SizeIs(1));
  // Times start at the first node; the origin is stated.
  for (const Struct* x : trace.Phase("X")) {
    if (Trace::Str(*x, "name") == "send") {
      EXPECT_EQ(Trace::Num(*x, "ts"), 0);
    }
    if (Trace::Str(*x, "name") == "quote\"d\x01") {
      EXPECT_EQ(Trace::Str(*x, "cat"), "Op\\");
    }
  }
  EXPECT_EQ(Trace::Num(trace.other, "origin_unix_micros"), 1'000'000);
  EXPECT_THAT(Trace::Str(trace.other, "clock offset /job:ps/replica:0/task:0"),
              HasSubstr("+250 us"));
  // A counter per device that reported its memory.
  std::map<std::string, std::vector<double>> counters;
  for (const Struct* c : trace.Phase("C")) {
    counters[Trace::Str(*c, "name")].push_back(
        c->fields().at("args").struct_value().fields().at("bytes").number_value());
  }
  EXPECT_EQ(counters["memory /device:CPU:0"], (std::vector<double>{4096, 8192}));
}

TEST(Timeline, NothingTracedIsAnEmptyTrace) {
  const Trace trace = Parse(Timeline(RunMetadata()).ToChromeTrace());
  EXPECT_TRUE(trace.events.empty());
}

TEST(Timeline, WriteNamesAPathItCannotWrite) {
  EXPECT_THAT(Timeline(RunMetadata()).WriteChromeTrace("/nonexistent-dir/x/trace.json").message(),
              HasSubstr("/nonexistent-dir/x"));
}

// One step of a ps and two workers, traced from the first worker's master:
// every task's nodes appear on its own process, each transfer is a flow,
// and the other two tasks' clocks are stated.
TEST(Timeline, AClusterStepIsOneTrace) {
  ASSERT_OK_AND_ASSIGN(auto servers,
                       Server::CreateLocalCluster({{"ps", 1}, {"worker", 2}}, QuietLog()));
  const Scope root = ops::NewRootScope();
  const Variable w(root.WithDevice("/job:ps/task:0"), "w",
                   Tensor::FromVector<float>({2, 3}, TensorShape({2})));
  const Output x =
      ops::Placeholder(root.WithDevice("/job:worker/task:0").WithOpName("x"), DT_FLOAT);
  const Output a = ops::Mul(root.WithDevice("/job:worker/task:0").WithOpName("a"), x, w);
  const Output b = ops::Square(root.WithDevice("/job:worker/task:1").WithOpName("b"), a);
  ops::Neg(root.WithDevice("/job:worker/task:0").WithOpName("c"), b);
  GlobalVariablesInitializer(root);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  SessionOptions options;
  options.target = servers[1]->target();
  ASSERT_OK_AND_ASSIGN(auto session, NewSession(options, graph));
  ASSERT_OK(session->Run({}, {}, {"init"}).status());
  RunOptions run;
  run.trace = true;
  RunMetadata metadata;
  const Tensor feed = Tensor::FromVector<float>({1, 1}, TensorShape({2}));
  ASSERT_OK(session->Run(run, {{"x", feed}}, {"c"}, {}, &metadata).status());

  const Trace trace = Parse(Timeline(metadata).ToChromeTrace());
  const std::map<int, std::string> processes = trace.Processes();
  ASSERT_THAT(processes, SizeIs(3));
  std::map<std::string, int> pid_of;
  for (const auto& [pid, name] : processes) pid_of[name.substr(0, name.find(' '))] = pid;
  ASSERT_TRUE(pid_of.contains("/job:ps/replica:0/task:0"));
  ASSERT_TRUE(pid_of.contains("/job:worker/replica:0/task:0"));
  ASSERT_TRUE(pid_of.contains("/job:worker/replica:0/task:1"));
  EXPECT_THAT(processes.at(pid_of["/job:worker/replica:0/task:0"]),
              HasSubstr("the clock of this trace"));
  std::map<std::string, int> node_pid;
  int sends = 0;
  for (const Struct* x : trace.Phase("X")) {
    node_pid[Trace::Str(*x, "name")] = Trace::Int(*x, "pid");
    if (Trace::Str(*x, "cat") == "_Send") ++sends;
  }
  EXPECT_EQ(node_pid["w"], pid_of["/job:ps/replica:0/task:0"]);
  EXPECT_EQ(node_pid["a"], pid_of["/job:worker/replica:0/task:0"]);
  EXPECT_EQ(node_pid["b"], pid_of["/job:worker/replica:0/task:1"]);
  EXPECT_EQ(node_pid["c"], pid_of["/job:worker/replica:0/task:0"]);
  // w to worker 0, a to worker 1, b back to worker 0.
  EXPECT_GE(sends, 3);
  EXPECT_THAT(trace.Phase("s"), SizeIs(sends));
  ExpectFlowsJoinSendsToReceives(trace);
  ExpectTracksMonotone(trace);
  ASSERT_THAT(metadata.task_clocks, SizeIs(2));
  for (const TaskClock& clock : metadata.task_clocks) {
    EXPECT_NE(clock.task, "/job:worker/replica:0/task:0");
    EXPECT_GE(clock.network_micros, 0);
  }
  EXPECT_FALSE(trace.Phase("C").empty());  // CPU memory in use.
}

}  // namespace
}  // namespace rill
