// Writes the seed corpora the fuzz targets started from, into
// CORPUS_DIR/<target>/seed-*: inputs built with rill's own writers from
// the tests' graphs, tensors and messages, and copies of small files from
// the test data. Crash inputs found later sit beside them (crash-*).
//
//   make_fuzz_seeds CORPUS_DIR   (RILL_TESTDATA names the test data)
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/npy.h"
#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/proto/event.pb.h"
#include "graph/status_macros.h"
#include "graph/tensor_slice.h"
#include "io/bundle_format.h"
#include "io/bundle_writer.h"
#include "io/record_writer.h"
#include "io/table.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "ops/variable.h"
#include "placement/device_set.h"
#include "runtime/session/partition_plan.h"
#include "runtime/session/run_signature.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/zmtp_curve.h"
#include "tests/runtime/bad_input_graphs.h"
#include "tests/transport/curve_client.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/wire.h"
#include "transport/zmtp/protocol.h"

namespace rill::fuzz {
namespace {

std::string corpus_dir;

template <typename T>
T OrDie(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) {
    std::fprintf(stderr, "make_fuzz_seeds: %s: %s\n", what, value.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(value);
}

void OrDie(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "make_fuzz_seeds: %s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "make_fuzz_seeds: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Seed(const std::string& target, const std::string& name, std::string_view bytes) {
  const std::string dir = corpus_dir + "/" + target;
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/seed-" + name, bytes);
}

std::string TestData(const std::string& relative) {
  const char* dir = std::getenv("RILL_TESTDATA");
  return std::string(dir != nullptr ? dir : "../shared/testdata") + "/" + relative;
}

// Graphs: y = x * x + 1 (fed x), a variable with its initializer, a queue,
// a small dense layer, and the hostile graphs of the bad-input tests.
struct SeedGraph {
  std::string name;
  GraphDef graph;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  // Targets of a step run first (variable initializers).
  std::vector<std::string> setup;
};

std::vector<SeedGraph> Graphs() {
  std::vector<SeedGraph> graphs;
  {
    const Scope root = ops::NewRootScope();
    const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    ops::Add(root.WithOpName("y"), ops::Square(root, x),
             ops::Const(root, Tensor::Scalar<float>(1), DT_FLOAT));
    graphs.push_back({"square",
                      OrDie(root.ToGraphDef(), "square graph"),
                      {{"x", Tensor::FromVector<float>({3, -1}, {2})}},
                      {"y:0"},
                      {},
                      {}});
  }
  {
    const Scope root = ops::NewRootScope();
    const Variable w(root, "w",
                     ops::Const(root, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}), DT_FLOAT));
    const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    ops::Relu(root.WithOpName("y"), ops::MatMul(root, x, w));
    graphs.push_back({"dense",
                      OrDie(root.ToGraphDef(), "dense graph"),
                      {{"x", Tensor::FromVector<float>({1, 0, 0, 1}, {2, 2})}},
                      {"y:0"},
                      {},
                      {w.initializer().node()->name()}});
  }
  {
    const Scope root = ops::NewRootScope();
    const ops::FIFOQueueV2 queue(root.WithOpName("q"), {DT_FLOAT}, ops::FIFOQueueV2::Capacity(2));
    const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    ops::QueueEnqueueV2(root.WithOpName("enqueue"), queue, {x});
    graphs.push_back({"queue",
                      OrDie(root.ToGraphDef(), "queue graph"),
                      {{"x", Tensor::Scalar<float>(5)}},
                      {},
                      {"enqueue"},
                      {}});
  }
  for (testing::BadInputCase& c : testing::BadInputCases("")) {
    std::vector<std::string> fetches = {c.fetch};
    graphs.push_back(
        {"bad_input_" + c.name, std::move(c.graph), std::move(c.feeds), fetches, {}, {}});
  }
  return graphs;
}

std::string Frames(const RpcHeader& header, const std::vector<Tensor>& tensors) {
  std::vector<zmq::message_t> frames = OrDie(EncodeMessage(header, tensors), "encode");
  std::vector<std::string> parts;
  for (const zmq::message_t& frame : frames) parts.emplace_back(frame.data<char>(), frame.size());
  return Join(parts, kPartSeparator);
}

std::string Request(const std::string& method, const google::protobuf::Message& body,
                    const std::vector<Tensor>& tensors = {}) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(1);
  header.set_body(body.SerializeAsString());
  return Frames(header, tensors);
}

// The partitions a master would register on a two-CPU worker; an error
// for a graph no master would get that far with.
absl::StatusOr<RegisterGraphRequest> Registration(const SeedGraph& seed) {
  ASSIGN_OR_RETURN(const std::unique_ptr<Graph> graph, ImportGraphDef(seed.graph, StandardOps()));
  std::vector<std::string> feeds;
  for (const auto& [name, tensor] : seed.feeds) feeds.push_back(name);
  ASSIGN_OR_RETURN(const RunSignature sig, ResolveNames(*graph, feeds, seed.fetches, seed.targets));
  const std::string task = "/job:worker/replica:0/task:0";
  ASSIGN_OR_RETURN(const DeviceSet devices,
                   DeviceSet::Create({task + "/device:CPU:0", task + "/device:CPU:1"}));
  PartitionPlanParams params;
  params.graph = graph.get();
  ASSIGN_OR_RETURN(params.nodes, Prune(*graph, sig));
  params.feeds = sig.feeds;
  params.fetches = sig.fetches;
  params.device_set = &devices;
  params.placer.default_device = task + "/device:CPU:0";
  ASSIGN_OR_RETURN(PartitionPlan plan, MakePartitionPlan(params));
  RegisterGraphRequest request;
  for (auto& [device, partition] : plan.partitions) {
    (*request.mutable_partitions())[device] = partition;
    for (const std::string& feed : plan.io[device].feed_nodes) request.add_feeds(feed);
    for (const std::string& fetch : plan.io[device].fetch_names) request.add_fetches(fetch);
  }
  return request;
}

void GraphSeeds(const std::vector<SeedGraph>& graphs) {
  for (const char* name : {"tf_graphs/rust_addition.pb", "tf_graphs/rust_multiplication.pb",
                           "tf_graphs/rust_regression.pb", "tf_graphs/tf2onnx_regression_frozen.pb",
                           "tf_graphs/tfadd_int32.pbtxt", "tf_graphs/const_values.pbtxt",
                           "tf_graphs/partial_device_names.pbtxt"}) {
    Seed("graph_def", std::filesystem::path(name).filename().string(), ReadBytes(TestData(name)));
  }
  for (const SeedGraph& g : graphs) {
    Seed("graph_def", g.name + ".pb", SerializeGraphDef(g.graph, GraphFormat::kBinary));
  }
  Seed("graph_def", "square.pbtxt", SerializeGraphDef(graphs[0].graph, GraphFormat::kText));
}

void WireSeeds() {
  RpcHeader request;
  request.set_method("RunGraph");
  request.set_request_id(7);
  request.set_timeout_micros(1000000);
  ResourceHandleProto handle;
  handle.set_device("/job:ps/replica:0/task:0/device:CPU:0");
  handle.set_container("c");
  handle.set_name("v");
  Tensor resource(DT_RESOURCE, TensorShape({1}));
  static_cast<ResourceHandleProto*>(resource.raw_data())[0] = handle;
  const std::vector<std::pair<std::string, std::vector<Tensor>>> cases = {
      {"empty", {}},
      {"float_matrix", {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}},
      {"scalars",
       {Tensor::Scalar<int64_t>(-5), Tensor::Scalar<double>(0.5), Tensor::Scalar<bool>(true)}},
      {"strings", {Tensor::FromVector<std::string>({"a", "", "longer string"}, {3})}},
      {"resource", {resource}},
      {"empty_tensor", {Tensor(DT_FLOAT, TensorShape({0, 3}))}},
      {"bytes",
       {Tensor::FromVector<uint8_t>({0, 255, 7}, {3}),
        Tensor::FromVector<complex64>({{1, 2}}, {1})}},
  };
  for (const auto& [name, tensors] : cases) Seed("wire_message", name, Frames(request, tensors));
  RpcHeader reply;
  reply.set_is_reply(true);
  reply.set_request_id(7);
  reply.set_status_code(3);
  reply.set_status_message("node 'y' (Add): bad");
  Seed("wire_message", "error_reply", Frames(reply, {}));
}

// A stream a client sends a server: its first byte's bit 0 asks the target
// for a valid handshake first, the rest say how the stream is cut; then
// frames.
void ZmtpSeeds() {
  const auto frame = [](uint8_t flags, std::string_view body) {
    uint8_t header[zmtp::kLongHeaderBytes];
    const size_t length = zmtp::EncodeFrameHeader(flags, body.size(), header);
    return std::string(reinterpret_cast<const char*>(header), length) + std::string(body);
  };
  const auto message = [&](const RpcHeader& header, const std::vector<Tensor>& tensors) {
    std::vector<zmq::message_t> frames = OrDie(EncodeMessage(header, tensors), "encode");
    std::string bytes;
    for (size_t i = 0; i < frames.size(); ++i) {
      bytes += frame(i + 1 < frames.size() ? zmtp::kMore : 0, frames[i].to_string_view());
    }
    return bytes;
  };
  RpcHeader run;
  run.set_method("RunGraph");
  run.set_request_id(7);
  RpcHeader ping;
  ping.set_method("_ping");
  ping.set_request_id(8);
  const std::string requests =
      message(run, {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}),
                    Tensor::FromVector<std::string>({"a", "bc"}, {2})}) +
      message(ping, {}) + frame(zmtp::kCommand, zmtp::CommandBody("PING", std::string(2, '\0')));
  Seed("zmtp_stream", "requests", std::string(1, '\x01') + requests);
  Seed("zmtp_stream", "requests_cut", std::string(1, '\x85') + requests);
  // Read in pieces of 1 KiB (bits 1-4: log2 of the piece).
  Seed("zmtp_stream", "large_tensor",
       std::string(1, '\x15') + message(run, {Tensor(DT_FLOAT, TensorShape({10, 1024}))}));
  Seed("zmtp_stream", "handshake",
       std::string(1, '\x00') + zmtp::ServerGreeting(zmtp::Mechanism::kNull) +
           frame(zmtp::kCommand,
                 zmtp::CommandBody("READY", zmtp::EncodeProperties(
                                                {{"Socket-Type", "DEALER"}, {"Identity", ""}}))) +
           message(ping, {}));
  RpcHeader undeclared;
  undeclared.set_method("RunGraph");
  Seed("zmtp_stream", "undeclared_frames",
       std::string(1, '\x01') + frame(zmtp::kMore, undeclared.SerializeAsString()) +
           frame(zmtp::kMore, "") + frame(0, ""));

  // CURVE (0x20): after the target's own handshake (0x01), records it seals
  // (0x40), tests/fuzz/zmtp_curve.h.
  const auto records = [](const RpcHeader& header, const std::vector<Tensor>& tensors,
                          bool last = false) {
    std::vector<zmq::message_t> frames = OrDie(EncodeMessage(header, tensors), "encode");
    std::string bytes;
    for (size_t i = 0; i < frames.size(); ++i) {
      const bool more = i + 1 < frames.size();
      bytes += Record(0, more ? testing::kBoxMore : 0, frames[i].to_string_view(), last && !more);
    }
    return bytes;
  };
  // A TTL, then the context.
  const std::string heartbeat = std::string("\x00\x0a", 2) + "ctx";
  const std::string ping_command =
      Record(0, testing::kBoxCommand, zmtp::CommandBody("PING", heartbeat));
  const std::string sealed = records(run, {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}),
                                           Tensor::FromVector<std::string>({"a", "bc"}, {2})}) +
                             records(ping, {}) + ping_command;
  Seed("zmtp_stream", "curve_requests", std::string(1, '\xe5') + sealed);
  // 40 KiB read straight into its memory, in reads of 1 KiB; 160 KiB in
  // 32-byte units, in reads of 16 KiB.
  Seed("zmtp_stream", "curve_large_tensor",
       std::string(1, '\x75') + records(run, {Tensor(DT_FLOAT, TensorShape({10, 1024}))}, true));
  Seed("zmtp_stream", "curve_wide_tensor",
       std::string(1, '\x7d') + records(run, {Tensor(DT_UINT8, TensorShape({160 << 10}))}, true));
  const std::string request = records(ping, {});
  Seed("zmtp_stream", "curve_replayed_nonce",
       std::string(1, '\x6d') + request + Record(kRecordReplay, 0, EncodeHeader(ping).to_string()));
  // Raw bytes, as the deterministic client and server agree on them: the
  // whole handshake and the sealed frames after it (0x20). Corrupt boxes
  // and reserved flags are a bit away in the records above; every CURVE
  // input costs a dozen key exchanges, so the seeds are few.
  UseDeterministicRandomness();
  const CurveSession& session = HandshakenSession();
  Seed("zmtp_stream", "curve_handshake",
       std::string(1, '\x20') + session.prefix +
           SealRecords(sealed, session.client, size_t{1} << 20));
}

void WorkerSeeds(const std::vector<SeedGraph>& graphs) {
  for (const SeedGraph& g : graphs) {
    absl::StatusOr<RegisterGraphRequest> registration = Registration(g);
    if (!registration.ok()) continue;
    std::vector<Tensor> feeds;
    for (const auto& [name, tensor] : g.feeds) feeds.push_back(tensor);
    RunGraphRequest run;  // The empty handle stands for the registered one.
    run.set_step_id(1);
    DeregisterGraphRequest deregister;
    deregister.add_graph_handles("");
    std::vector<std::string> messages;
    if (!g.setup.empty()) {
      const SeedGraph setup{g.name, g.graph, {}, {}, g.setup, {}};
      messages.push_back(Request("RegisterGraph", OrDie(Registration(setup), "setup")));
      messages.push_back(Request("RunGraph", run));
    }
    messages.push_back(Request("RegisterGraph", *registration));
    messages.push_back(Request("RunGraph", run, feeds));
    if (g.name == "square") {
      run.set_step_id(2);
      run.set_trace(true);
      messages.push_back(Request("RunGraph", run, feeds));
      PushTensorRequest push;
      push.set_step_id(3);
      push.set_key("/job:ps/replica:0/task:0/device:CPU:0;1;" + std::string(graphs[0].name) +
                   ";edge_1_x;0:0");
      messages.push_back(Request("PushTensor", push, {Tensor::Scalar<float>(2)}));
      AbortStepRequest abort;
      abort.set_step_id(2);
      abort.set_status_code(10);
      abort.set_status_message("aborted by the master");
      messages.push_back(Request("AbortStep", abort));
      messages.push_back(Request("GetStatus", RunGraphRequest()));
    }
    messages.push_back(Request("DeregisterGraph", deregister));
    Seed("worker_service", g.name, Join(messages, kMessageSeparator));
  }
}

void MasterSeeds(const std::vector<SeedGraph>& graphs) {
  for (const SeedGraph& g : graphs) {
    CreateSessionRequest create;
    *create.mutable_graph() = g.graph;
    create.mutable_config()->set_allow_soft_placement(true);
    RunStepRequest run;  // The empty handle stands for the created session.
    std::vector<Tensor> feeds;
    for (const auto& [name, tensor] : g.feeds) {
      run.add_feeds(name);
      feeds.push_back(tensor);
    }
    for (const std::string& fetch : g.fetches) run.add_fetches(fetch);
    for (const std::string& target : g.targets) run.add_targets(target);
    std::vector<std::string> messages = {Request("CreateSession", create)};
    if (!g.setup.empty()) {
      RunStepRequest setup;
      for (const std::string& target : g.setup) setup.add_targets(target);
      messages.push_back(Request("RunStep", setup));
    }
    messages.push_back(Request("RunStep", run, feeds));
    if (g.name == "square") {
      run.set_trace(true);
      messages.push_back(Request("RunStep", run, feeds));
      ExtendSessionRequest extend;
      NodeDef* z = extend.mutable_graph()->add_node();
      z->set_name("z");
      z->set_op("Neg");
      z->add_input("y");
      (*z->mutable_attr())["T"].set_type(DT_FLOAT);
      messages.push_back(Request("ExtendSession", extend));
      RunStepRequest run_z = run;
      run_z.clear_fetches();
      run_z.add_fetches("z");
      messages.push_back(Request("RunStep", run_z, feeds));
      messages.push_back(Request("ListDevices", CloseSessionRequest()));
    }
    messages.push_back(Request("CloseSession", CloseSessionRequest()));
    Seed("master_service", g.name, Join(messages, kMessageSeparator));
  }
}

void NpySeeds() {
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"float_matrix", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"double_scalar", Tensor::Scalar<double>(2.5)},
      {"uint8_vector", Tensor::FromVector<uint8_t>({7, 8, 9}, {3})},
      {"bool", Tensor::FromVector<bool>({true, false}, {2})},
      {"int64_3d", Tensor::FromVector<int64_t>({1, -2, 3, -4}, {1, 2, 2})},
      {"complex64", Tensor::FromVector<complex64>({{1, 2}, {3, 4}}, {2})},
      {"empty", Tensor(DT_INT32, TensorShape({0, 2}))},
  };
  for (const auto& [name, tensor] : tensors) {
    Seed("npy", name + ".npy", OrDie(SerializeNpy(tensor), "npy"));
  }
  // Fortran order and format 2.0, as numpy writes them.
  std::string fortran = OrDie(SerializeNpy(tensors[0].second), "npy");
  const size_t at = fortran.find("False");
  fortran.replace(at, 5, "True ");
  Seed("npy", "fortran.npy", fortran);
  std::string v2 = "\x93NUMPY\x02";
  v2 += '\0';
  const std::string dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }";
  const size_t header_len = 128 - 12;  // The data starts 64-byte aligned.
  for (int i = 0; i < 4; ++i) v2 += static_cast<char>((header_len >> (8 * i)) & 0xff);
  v2 += dict + std::string(header_len - dict.size() - 1, ' ') + "\n";
  v2 += std::string("\x01\x00\xff\xff", 4);
  Seed("npy", "v2.npy", v2);
}

void TextSeeds() {
  const std::vector<std::pair<std::string, std::string>> json = {
      {"matrix", "float32\n[[1, 2], [3, 4]]"},
      {"scalar", "int64\n-9223372036854775808"},
      {"bools", "bool\n[true, false]"},
      {"specials", "float64\n[\"NaN\", \"-Infinity\", 1e308, -0.0, 5e-324]"},
      {"strings", "string\n[\"a\\n\\u00e9\\\"\", \"\"]"},
      {"complex", "complex64\n[[1.5, -2], [0, 1e-3]]"},
      {"empty", "uint8\n[[], []]"},
      {"half", "float16\n[65504, 6.1e-05, 0.1]"},
      {"bfloat16", "bfloat16\n[1.5, -3.4e38]"},
  };
  for (const auto& [name, text] : json) Seed("tensor_json", name, text);
  const std::vector<std::pair<std::string, std::string>> specs = {
      {"dense", "spec\nps=127.0.0.1:2222,127.0.0.1:2223;worker=127.0.0.1:2224"},
      {"sparse", "spec\nworker=1:h:2223,3:[::1]:2225;ps=[::1]:2222"},
      {"flags",
       "flags\nps_hosts=localhost:2222\nworker_hosts=localhost:2223,localhost:2224\n"
       "job_name=worker\ntask_index=1\nissync=1\ncurve_keys=/keys"},
      {"flags_worker_only", "flags\nworker_hosts=h:1\njob_name=worker\ntask_index=0\nissync=false"},
  };
  for (const auto& [name, text] : specs) Seed("cluster_spec", name, text);
  const std::vector<std::pair<std::string, std::string>> tf_configs = {
      {"dense",
       R"({"cluster": {"chief": ["h:2220"], "ps": ["h:2222"], "worker": ["h:2223", "h:2224"]},
"task": {"type": "worker", "index": 1}, "environment": "cloud", "rpc_layer": "grpc"})"},
      {"sparse",
       R"({"cluster": {"ps": ["h:2222"], "worker": {"1": "h:2224", "3": "h:2226"}},
"task": {"type": "worker", "index": 3}})"},
      {"string_index", R"({"cluster": {"ps": ["[::1]:1"]}, "task": {"type": "ps", "index": "0"},
"curve_keys": "/keys"})"},
  };
  for (const auto& [name, text] : tf_configs) Seed("tf_config", name, text);
}

// The checkpoint's index as the target's entry parts.
std::string IndexEntries(const std::string& index_path) {
  const std::unique_ptr<io::TableReader> table =
      OrDie(io::TableReader::Open(index_path), "open index");
  std::vector<std::string> parts;
  OrDie(table->ForEach([&](std::string_view key, std::string_view value) {
    std::string part(1, static_cast<char>(key.size()));
    part.append(key);
    part.append(value);
    parts.push_back(std::move(part));
    return absl::OkStatus();
  }),
        "read index");
  return Join(parts, kPartSeparator);
}

void CheckpointSeeds() {
  const std::string tf = TestData("tf_checkpoints/regression-model/variables/variables");
  const std::string tf_data = ReadBytes(tf + ".data-00000-of-00001");
  Seed("checkpoint", "tf_raw", tf_data + std::string(kPartSeparator) + ReadBytes(tf + ".index"));
  Seed("checkpoint", "tf_entries",
       tf_data + std::string(kPartSeparator) + IndexEntries(tf + ".index"));

  const std::string prefix = ScratchDir() + "/seed";
  std::unique_ptr<io::BundleWriter> writer = OrDie(io::BundleWriter::Create(prefix), "writer");
  OrDie(writer->Add("a/matrix", Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {3, 2})), "add");
  OrDie(writer->Add("b/strings", Tensor::FromVector<std::string>({"x", "", "yz"}, {3})), "add");
  OrDie(writer->Add("c/scalar", Tensor::Scalar<int32_t>(7)), "add");
  const TensorShape full({4, 2});
  TensorSlice top = TensorSlice::Full(2);
  top.Set(0, 0, 2);
  TensorSlice bottom = TensorSlice::Full(2);
  bottom.Set(0, 2, 2);
  OrDie(
      writer->AddSlice("d/partitioned", full, top, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})),
      "add slice");
  OrDie(writer->AddSlice("d/partitioned", full, bottom,
                         Tensor::FromVector<float>({5, 6, 7, 8}, {2, 2})),
        "add slice");
  OrDie(writer->Finish(), "finish");
  const std::string data = ReadBytes(io::DataFilename(prefix, 0, 1));
  Seed("checkpoint", "rill_entries",
       data + std::string(kPartSeparator) + IndexEntries(io::IndexFilename(prefix)));
}

void EventSeeds(const std::vector<SeedGraph>& graphs) {
  Seed("event_file", "tf_record", ReadBytes(TestData("tf_checkpoints/expected.tfrecord")));
  std::vector<std::string> records;
  Event version;
  version.set_wall_time(1700000000);
  version.set_file_version("brain.Event:2");
  records.push_back(version.SerializeAsString());
  Event scalar;
  scalar.set_step(10);
  Summary::Value* value = scalar.mutable_summary()->add_value();
  value->set_tag("loss");
  value->set_simple_value(0.25f);
  records.push_back(scalar.SerializeAsString());
  Event histogram;
  histogram.set_step(11);
  Summary::Value* histo = histogram.mutable_summary()->add_value();
  histo->set_tag("weights");
  histo->mutable_histo()->set_min(-1);
  histo->mutable_histo()->set_max(2);
  histo->mutable_histo()->set_num(3);
  histo->mutable_histo()->add_bucket_limit(0);
  histo->mutable_histo()->add_bucket(1);
  records.push_back(histogram.SerializeAsString());
  Event graph;
  graph.set_graph_def(SerializeGraphDef(graphs[0].graph, GraphFormat::kBinary));
  records.push_back(graph.SerializeAsString());
  Seed("event_file", "framed_events", std::string(kPartSeparator) + Join(records, kPartSeparator));
  // The same events as a file, CRCs and all.
  const std::string path = ScratchDir() + "/events";
  {
    std::unique_ptr<RecordWriter> writer = OrDie(RecordWriter::Open(path), "record writer");
    for (const std::string& record : records) OrDie(writer->WriteRecord(record), "record");
    OrDie(writer->Close(), "close");
  }
  Seed("event_file", "event_file", ReadBytes(path));
}

}  // namespace
}  // namespace rill::fuzz

int main(int argc, char** argv) {
  using namespace rill::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  corpus_dir = argv[1];
  const std::vector<SeedGraph> graphs = Graphs();
  GraphSeeds(graphs);
  WireSeeds();
  ZmtpSeeds();
  WorkerSeeds(graphs);
  MasterSeeds(graphs);
  NpySeeds();
  TextSeeds();
  CheckpointSeeds();
  EventSeeds(graphs);
  return 0;
}
