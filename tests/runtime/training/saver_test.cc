// Saver through a Session: TensorFlow's graph names, save and restore, the
// checkpoint TensorFlow wrote, retention and the state file, sharded saves
// over two devices, and .meta files.
#include "runtime/training/saver.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "graph/graph_io.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "io/bundle_reader.h"
#include "ops/ops.h"
#include "placement/replica_device_setter.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/meta_graph.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOk;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TfCheckpoint() {
  return ::rill::testing::TestDataDir() + "/tf_checkpoints/regression-model/variables/variables";
}

// w and b as in TensorFlow's regression model (float [1]), plus an
// assign of new values and a Saver.
struct Model {
  explicit Model(const SaverOptions& options = {}, const std::string& w_device = "",
                 const std::string& b_device = "")
      : scope(ops::NewRootScope()),
        w(scope.WithDevice(w_device), "w", Tensor::FromVector<float>({1.5f}, TensorShape({1}))),
        b(scope.WithDevice(b_device), "b", Tensor::FromVector<float>({2.5f}, TensorShape({1}))) {
    ops::Assign(scope.WithOpName("set_w"), w.ref(),
                ops::Placeholder(scope.WithOpName("new_w"), DT_FLOAT));
    GlobalVariablesInitializer(scope);
    saver = Saver::Build(scope, {w, b}, options).value();
    graph = scope.ToGraphDef().value();
  }

  std::unique_ptr<Session> NewSessionOn() const {
    return NewSession(SessionOptions(), graph).value();
  }

  Scope scope;
  Variable w;
  Variable b;
  std::unique_ptr<Saver> saver;
  GraphDef graph;
};

float Fetch(Session& session, const char* name) {
  return session.Run({}, {name}, {}).value().at(0).data<float>()[0];
}

TEST(SaverTest, BuildsTensorFlowsSaverGraph) {
  Model model;
  std::vector<std::string> names;
  for (const NodeDef& node : model.graph.node()) {
    if (node.name().starts_with("save/")) names.push_back(node.name() + " " + node.op());
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "save/Const Const", "save/SaveV2/tensor_names Const",
                         "save/SaveV2/shape_and_slices Const", "save/SaveV2 SaveV2",
                         "save/control_dependency Identity", "save/RestoreV2/tensor_names Const",
                         "save/RestoreV2/shape_and_slices Const", "save/RestoreV2 RestoreV2",
                         "save/Assign Assign", "save/Assign_1 Assign", "save/restore_all NoOp"));
  const SaverDef& def = model.saver->saver_def();
  EXPECT_EQ(def.filename_tensor_name(), "save/Const:0");
  EXPECT_EQ(def.save_tensor_name(), "save/control_dependency:0");
  EXPECT_EQ(def.restore_op_name(), "save/restore_all");
  EXPECT_EQ(def.version(), SaverDef::V2);
  // The same names are what FindSaverDef looks for in a graph without one.
  ASSERT_OK_AND_ASSIGN(SaverDef found, FindSaverDef(model.graph));
  EXPECT_EQ(found.save_tensor_name(), def.save_tensor_name());
}

TEST(SaverTest, SavesAndRestoresVariables) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  std::unique_ptr<Session> session = model.NewSessionOn();
  ASSERT_OK(session->Run({}, {}, {"init"}));
  ASSERT_OK(session->Run({{"new_w", Tensor::FromVector<float>({-3.f}, TensorShape({1}))}}, {},
                         {"set_w"}));
  ASSERT_OK_AND_ASSIGN(std::string prefix, model.saver->Save(*session, dir + "/model.ckpt", 7));
  EXPECT_EQ(prefix, dir + "/model.ckpt-7");

  std::unique_ptr<Session> fresh = model.NewSessionOn();
  ASSERT_OK(fresh->Run({}, {}, {"init"}));
  EXPECT_EQ(Fetch(*fresh, "w"), 1.5f);
  ASSERT_OK(model.saver->Restore(*fresh, prefix));
  EXPECT_EQ(Fetch(*fresh, "w"), -3.f);
  EXPECT_EQ(Fetch(*fresh, "b"), 2.5f);
  // A restore into a session that never ran the initializer works too.
  std::unique_ptr<Session> uninitialized = model.NewSessionOn();
  ASSERT_OK(model.saver->Restore(*uninitialized, prefix));
  EXPECT_EQ(Fetch(*uninitialized, "w"), -3.f);

  EXPECT_THAT(model.saver->Restore(*fresh, dir + "/missing"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.index")));
  EXPECT_EQ(LatestCheckpoint(dir), prefix);
}

// A prefix that names no file of its own would scatter a checkpoint beside
// it ("/" writes "/.index"): refused, naming it, before anything runs, and
// by the SaveV2 kernel itself when fed one.
TEST(SaverTest, RefusesPrefixesThatNameNoFile) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  std::unique_ptr<Session> session = model.NewSessionOn();
  ASSERT_OK(session->Run({}, {}, {"init"}));
  for (const std::string& prefix : {std::string("/"), dir + "/", dir + "/.", dir + "/..", dir,
                                    std::string("/dev/full"), std::string(".")}) {
    SCOPED_TRACE(prefix);
    EXPECT_THAT(model.saver->Save(*session, prefix),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("checkpoint prefix '" + prefix + "'")));
    EXPECT_THAT(session->Run({{"save/Const", Tensor::Scalar<std::string>(prefix)}},
                             {"save/control_dependency"}, {}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("checkpoint prefix '" + prefix + "'")));
  }
  EXPECT_FALSE(std::filesystem::exists("/.index"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint"));
  EXPECT_THAT(model.saver->Save(*session, dir + "/model.ckpt"), IsOk());
}

TEST(SaverTest, RestoresTensorFlowsCheckpointAndWritesItsBytes) {
  Model model;
  std::unique_ptr<Session> session = model.NewSessionOn();
  ASSERT_OK(model.saver->Restore(*session, TfCheckpoint()));
  EXPECT_FLOAT_EQ(Fetch(*session, "w"), -0.8578622f);
  EXPECT_FLOAT_EQ(Fetch(*session, "b"), 0.f);
  const std::string dir = ::rill::testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(std::string prefix, model.saver->Save(*session, dir + "/variables"));
  EXPECT_EQ(::rill::testing::ReadFileOrDie(prefix + ".index"),
            ::rill::testing::ReadFileOrDie(TfCheckpoint() + ".index"));
}

TEST(SaverTest, KeepsTheNewestCheckpointsAndListsThem) {
  SaverOptions options;
  options.max_to_keep = 2;
  Model model(options);
  const std::string dir = ::rill::testing::MakeTempDir();
  std::unique_ptr<Session> session = model.NewSessionOn();
  ASSERT_OK(session->Run({}, {}, {"init"}));
  MetaGraphDef meta = MakeMetaGraph(model.graph, nullptr);
  for (int step = 1; step <= 4; ++step) {
    ASSERT_OK(model.saver->Save(*session, dir + "/model.ckpt", step * 10, &meta).status());
  }
  for (int step : {1, 2}) {
    const std::string gone = dir + "/model.ckpt-" + std::to_string(step * 10);
    EXPECT_FALSE(std::filesystem::exists(gone + ".index")) << gone;
    EXPECT_FALSE(std::filesystem::exists(gone + ".meta")) << gone;
    EXPECT_FALSE(std::filesystem::exists(gone + ".data-00000-of-00001")) << gone;
  }
  EXPECT_THAT(model.saver->last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-30", dir + "/model.ckpt-40"));
  ASSERT_OK_AND_ASSIGN(std::optional<CheckpointState> state, GetCheckpointState(dir));
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), dir + "/model.ckpt-40");
  EXPECT_THAT(state->all_model_checkpoint_paths(),
              ElementsAre(dir + "/model.ckpt-30", dir + "/model.ckpt-40"));
  EXPECT_THAT(::rill::testing::ReadFileOrDie(dir + "/checkpoint"),
              HasSubstr("model_checkpoint_path: \"" + dir + "/model.ckpt-40\""));
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-40");
}

// A save directory given relative to the working directory, as a training
// script's --logdir often is: the state file lists the checkpoints
// relative to it, as TensorFlow writes them, so that the newest one is
// found again (before, every restart found none and started over).
TEST(SaverTest, CheckpointsInARelativeDirectoryAreFoundAgain) {
  SaverOptions options;
  options.max_to_keep = 2;
  Model model(options);
  std::unique_ptr<Session> session = model.NewSessionOn();
  ASSERT_OK(session->Run({}, {}, {"init"}));
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(::rill::testing::MakeTempDir());
  for (int step = 1; step <= 3; ++step) {
    ASSERT_OK(model.saver->Save(*session, "logs/model.ckpt", step).status());
  }
  const std::string state = ::rill::testing::ReadFileOrDie("logs/checkpoint");
  const std::optional<std::string> latest = LatestCheckpoint("logs");
  const std::optional<std::string> latest_dot = LatestCheckpoint("./logs");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(state,
            "model_checkpoint_path: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-2\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n");
  EXPECT_EQ(latest, "logs/model.ckpt-3");
  EXPECT_EQ(latest_dot, "./logs/model.ckpt-3");
}

// Variables on two ps tasks of an in-process cluster: each task writes
// its own shard from its CPU, and MergeV2Checkpoints joins them.
TEST(SaverTest, ShardedSaveWritesOneShardPerTaskAndMerges) {
  SaverOptions options;
  options.sharded = true;
  Model model(options, "/job:ps/task:0", "/job:ps/task:1");
  std::vector<std::string> shard_devices;
  for (const NodeDef& node : model.graph.node()) {
    if (node.op() == "SaveV2") shard_devices.push_back(node.device());
  }
  EXPECT_THAT(shard_devices, ::testing::UnorderedElementsAre("/job:ps/task:0/device:CPU:0",
                                                             "/job:ps/task:1/device:CPU:0"));
  EXPECT_EQ(model.saver->saver_def().save_tensor_name(), "save/Identity:0");

  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"worker", 1}, {"ps", 2}}));
  SessionOptions session_options;
  session_options.target = servers[0]->target();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(session_options, model.graph));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  const std::string dir = ::rill::testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(std::string prefix, model.saver->Save(*session, dir + "/model.ckpt", 1));
  // Only the merged checkpoint and the state file are left.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(files, ::testing::UnorderedElementsAre("checkpoint", "model.ckpt-1.index",
                                                     "model.ckpt-1.data-00000-of-00002",
                                                     "model.ckpt-1.data-00001-of-00002"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> fresh, NewSession(session_options, model.graph));
  ASSERT_OK(model.saver->Restore(*fresh, prefix));
  EXPECT_EQ(Fetch(*fresh, "w"), 1.5f);
  EXPECT_EQ(Fetch(*fresh, "b"), 2.5f);
}

// A [5, 3] variable "w" whose element (r, c) is 10 r + c (zeros when
// `zeros`), cut into `parts` rows by TensorFlow's fixed_size_partitioner
// (1: an ordinary variable), beside an ordinary "b".
GraphDef PartitionedModel(int parts, bool zeros, const std::string& w_device = "",
                          std::unique_ptr<Saver>* saver = nullptr, bool adam = false) {
  const Scope scope = ops::NewRootScope();
  const auto values = [zeros](const std::vector<int64_t>& offset,
                              const std::vector<int64_t>& shape) {
    std::vector<float> v;
    for (int64_t r = 0; r < shape[0]; ++r) {
      for (int64_t c = 0; c < shape[1]; ++c) {
        v.push_back(zeros ? 0.f : 10.f * (offset[0] + r) + static_cast<float>(offset[1] + c));
      }
    }
    return Tensor::FromVector<float>(v, TensorShape(shape));
  };
  const Scope on_device = scope.WithDevice(w_device);
  std::vector<Variable> trained;
  Output w_value;
  if (parts == 1) {
    trained.emplace_back(on_device, "w", values({0, 0}, {5, 3}));
    w_value = ops::Identity(scope.WithOpName("w_value"), trained[0]);
  } else {
    const PartitionedVariable w(on_device, "w", TensorShape({5, 3}), DT_FLOAT,
                                FixedSizePartitioner(parts),
                                [&](const Scope&, const SaveSliceInfo& slice) {
                                  return ops::Input(values(slice.var_offset, slice.var_shape));
                                });
    w_value = ops::Identity(scope.WithOpName("w_value"), w);
    trained = w.parts();
  }
  const Variable b(scope, "b", Tensor::FromVector<float>({2.5f}, TensorShape({1})));
  if (adam) {
    AdamOptimizer optimizer;
    const Output loss = ops::Sum(scope, ops::Square(scope, w_value), ops::Input({0, 1}));
    EXPECT_OK(optimizer.Minimize(scope, loss, trained, nullptr, "train").status());
  }
  GlobalVariablesInitializer(scope);
  absl::StatusOr<std::unique_ptr<Saver>> built =
      Saver::BuildForVariables(scope, AllVariables(scope));
  EXPECT_OK(built.status());
  if (saver != nullptr && built.ok()) *saver = *std::move(built);
  return scope.ToGraphDef().value();
}

std::vector<std::string> EntriesOf(const std::string& prefix) {
  std::vector<std::string> entries;
  absl::StatusOr<std::unique_ptr<io::BundleReader>> reader = io::BundleReader::Open(prefix);
  EXPECT_OK(reader.status());
  if (!reader.ok()) return entries;
  EXPECT_OK((*reader)->ForEachEntry([&](std::string_view key, const BundleEntryProto& entry) {
    if (!key.starts_with('\0')) {
      entries.push_back(absl::StrFormat("%s %d", key, entry.slices_size()));
    }
    return absl::OkStatus();
  }));
  return entries;
}

std::vector<float> FetchAll(Session& session, const std::string& name) {
  return Values<float>(session.Run({}, {name}, {}).value().at(0));
}

// As TensorFlow saves a partitioned variable: one key, the full name, whose
// entry lists each part's slice; it restores into any cut of that shape.
TEST(SaverTest, PartitionedVariablesAreSavedWholeAndRestoreIntoAnyCut) {
  std::unique_ptr<Saver> saver;
  const GraphDef graph = PartitionedModel(2, /*zeros=*/false, "", &saver);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), graph));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  const std::string dir = ::rill::testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(const std::string prefix, saver->Save(*session, dir + "/model.ckpt"));

  EXPECT_THAT(EntriesOf(prefix), ElementsAre("b 0", "w 2"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<io::BundleReader> reader, io::BundleReader::Open(prefix));
  const std::vector<float> whole = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
  ASSERT_OK_AND_ASSIGN(const Tensor w, reader->Read("w"));
  EXPECT_EQ(w.shape(), TensorShape({5, 3}));
  EXPECT_EQ(Values<float>(w), whole);

  // Into one variable, and into three parts (rows 2, 2, 1).
  for (int parts : {1, 3, 2}) {
    std::unique_ptr<Saver> other;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> fresh,
                         NewSession(SessionOptions(), PartitionedModel(parts, true, "", &other)));
    ASSERT_OK(other->Restore(*fresh, prefix));
    EXPECT_EQ(FetchAll(*fresh, "w_value"), whole) << parts << " parts";
    EXPECT_EQ(FetchAll(*fresh, "b"), std::vector<float>{2.5f});
  }
  // And an unpartitioned checkpoint into parts.
  std::unique_ptr<Saver> one_saver;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> one,
                       NewSession(SessionOptions(), PartitionedModel(1, false, "", &one_saver)));
  ASSERT_OK(one->Run({}, {}, {"init"}));
  ASSERT_OK_AND_ASSIGN(const std::string whole_prefix, one_saver->Save(*one, dir + "/whole.ckpt"));
  std::unique_ptr<Saver> parts_saver;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> cut,
                       NewSession(SessionOptions(), PartitionedModel(3, true, "", &parts_saver)));
  ASSERT_OK(parts_saver->Restore(*cut, whole_prefix));
  EXPECT_EQ(FetchAll(*cut, "w_value"), whole);
}

// An in-process cluster of a worker and two ps tasks, with a session on it.
struct TwoPsCluster {
  std::vector<std::unique_ptr<Server>> servers;
  std::unique_ptr<Session> session;
};

absl::StatusOr<TwoPsCluster> StartTwoPsCluster(const GraphDef& graph) {
  TwoPsCluster cluster;
  ASSIGN_OR_RETURN(cluster.servers, Server::CreateLocalCluster({{"worker", 1}, {"ps", 2}}));
  SessionOptions options;
  options.target = cluster.servers[0]->target();
  ASSIGN_OR_RETURN(cluster.session, NewSession(options, graph));
  return cluster;
}

// Trained on 1 worker and 2 ps tasks: the replica device setter puts the
// parts on both tasks, Adam's slots beside their parts, and the checkpoint
// holds the slots whole too ("w/Adam" with the parts' slices, as
// TensorFlow's slot_creator saves them).
TEST(SaverTest, PartsTrainOnTwoTasksAndTheirSlotsAreSavedWhole) {
  std::unique_ptr<Saver> saver;
  GraphDef graph = PartitionedModel(2, false, "", &saver, /*adam=*/true);
  ReplicaDeviceSetterOptions setter;
  setter.ps_devices = {"/job:ps/task:0", "/job:ps/task:1"};
  setter.worker_device = "/job:worker/task:0";
  ASSERT_OK(ApplyReplicaDeviceSetter(setter, &graph));
  std::map<std::string, std::string> devices;
  for (const NodeDef& node : graph.node()) {
    if (node.op() == "VariableV2" && node.name().starts_with("w/")) {
      devices[node.name()] = node.device();
    }
  }
  EXPECT_NE(devices["w/part_0"], devices["w/part_1"]);
  for (const std::string slot : {"Adam", "Adam_1"}) {
    EXPECT_EQ(devices["w/part_0/" + slot], devices["w/part_0"]);
    EXPECT_EQ(devices["w/part_1/" + slot], devices["w/part_1"]);
  }

  ASSERT_OK_AND_ASSIGN(const TwoPsCluster cluster, StartTwoPsCluster(graph));
  Session* session = cluster.session.get();
  ASSERT_OK(session->Run({}, {}, {"init"}));
  ASSERT_OK(session->Run({}, {}, {"train"}));
  const std::string dir = ::rill::testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(const std::string prefix, saver->Save(*session, dir + "/model.ckpt"));
  EXPECT_THAT(EntriesOf(prefix), ElementsAre("b 0", "beta1_power 0", "beta2_power 0", "w 2",
                                             "w/Adam 2", "w/Adam_1 2"));
  // One Adam step moved every element of w by about the learning rate.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<io::BundleReader> reader, io::BundleReader::Open(prefix));
  ASSERT_OK_AND_ASSIGN(const Tensor w, reader->Read("w"));
  EXPECT_NEAR(Values<float>(w)[14], 42.f - 0.001f, 1e-4f);
}

// Sharded: each ps task writes its part, and MergeV2Checkpoints joins the
// slices of the one key.
TEST(SaverTest, ShardedPartsMergeIntoOneEntry) {
  const Scope scope = ops::NewRootScope();
  const Variable part0(scope.WithDevice("/job:ps/task:0"), "w/part_0",
                       Tensor::FromVector<float>({1, 2}, TensorShape({2})),
                       SaveSliceInfo{"w", {4}, {0}, {2}});
  const Variable part1(scope.WithDevice("/job:ps/task:1"), "w/part_1",
                       Tensor::FromVector<float>({3, 4}, TensorShape({2})),
                       SaveSliceInfo{"w", {4}, {2}, {2}});
  GlobalVariablesInitializer(scope);
  SaverOptions sharded;
  sharded.sharded = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Saver> saver, Saver::Build(scope, {part0, part1}, sharded));
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, scope.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(const TwoPsCluster cluster, StartTwoPsCluster(graph));
  Session* session = cluster.session.get();
  ASSERT_OK(session->Run({}, {}, {"init"}));
  const std::string dir = ::rill::testing::MakeTempDir();
  ASSERT_OK_AND_ASSIGN(const std::string prefix, saver->Save(*session, dir + "/model.ckpt"));
  EXPECT_THAT(EntriesOf(prefix), ElementsAre("w 2"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<io::BundleReader> reader, io::BundleReader::Open(prefix));
  ASSERT_OK_AND_ASSIGN(const Tensor w, reader->Read("w"));
  EXPECT_THAT(Values<float>(w), ElementsAre(1, 2, 3, 4));
}

TEST(SaverTest, RefusesAVariableSavedTwiceOrWholeAndInSlices) {
  const Scope scope = ops::NewRootScope();
  const Variable whole(scope, "whole", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4})));
  const Variable part(scope, "whole_part", Tensor::FromVector<float>({1, 2}, TensorShape({2})),
                      SaveSliceInfo{"whole", {4}, {0}, {2}});
  ASSERT_OK(scope.status());
  EXPECT_THAT(Saver::BuildForVariables(scope, {whole.ref(), part.ref()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("variable 'whole' is listed twice (as 'whole' and 'whole_part', "
                                 "slice 4 0,2)")));
  EXPECT_THAT(Saver::BuildForVariables(scope, {part.ref(), part.ref()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'whole' is listed twice")));
  // Keys chosen by the caller save each variable whole.
  EXPECT_THAT(Saver::BuildWithKeys(scope, {{"a", whole.ref()}, {"b", part.ref()}}), IsOk());
}

TEST(SaverTest, MetaGraphRestoresIntoAFreshGraph) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  {
    std::unique_ptr<Session> session = model.NewSessionOn();
    ASSERT_OK(session->Run({}, {}, {"init"}));
    ASSERT_OK(session->Run({{"new_w", Tensor::FromVector<float>({9.f}, TensorShape({1}))}}, {},
                           {"set_w"}));
    const MetaGraphDef meta = MakeMetaGraph(model.graph, nullptr);
    ASSERT_OK(model.saver->Save(*session, dir + "/model.ckpt", 3, &meta).status());
  }
  ASSERT_OK_AND_ASSIGN(MetaGraphDef meta, ReadMetaGraph(dir + "/model.ckpt-3.meta"));
  EXPECT_EQ(meta.saver_def().restore_op_name(), "save/restore_all");
  EXPECT_GT(meta.meta_info_def().stripped_op_list().op_size(), 3);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                       NewSession(SessionOptions(), meta.graph_def()));
  ASSERT_OK(Saver::FromSaverDef(meta.saver_def())->Restore(*session, dir + "/model.ckpt-3"));
  EXPECT_EQ(Fetch(*session, "w"), 9.f);

  EXPECT_EQ(MetaGraphFilename("/a/model.ckpt-3"), "/a/model.ckpt-3.meta");
  EXPECT_EQ(MetaGraphFilename("/a/model.ckpt-3-00000-of-00002"), "/a/model.ckpt-3.meta");
  EXPECT_EQ(MetaGraphFilename("/a/model.ckpt-3-\?\?\?\?\?-of-00002"), "/a/model.ckpt-3.meta");
}

TEST(SaverTest, ReadsTheSavedModelTensorFlowWrote) {
  ASSERT_OK_AND_ASSIGN(MetaGraphDef meta,
                       ReadMetaGraph(::rill::testing::TestDataDir() +
                                     "/tf_checkpoints/regression-model/saved_model.pb"));
  EXPECT_FALSE(meta.saver_def().filename_tensor_name().empty());
  EXPECT_TRUE(meta.saver_def().sharded());
  EXPECT_GT(meta.graph_def().node_size(), 10);
  const std::string junk = ::rill::testing::MakeTempDir() + "/junk.meta";
  std::ofstream(junk) << "not a meta graph {";
  EXPECT_THAT(ReadMetaGraph(junk),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("junk.meta")));
}

TEST(CheckpointStateTest, BadOrMissingStateMeansNoCheckpoint) {
  const std::string dir = ::rill::testing::MakeTempDir();
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);
  std::ofstream(dir + "/checkpoint") << "model_checkpoint_path: ";
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);
  EXPECT_THAT(GetCheckpointState(dir),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint")));
  // Relative paths are read relative to the directory.
  ASSERT_OK(UpdateCheckpointState(dir, "model.ckpt-5", {}));
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);  // Listed, but its files are not there.
  ASSERT_OK_AND_ASSIGN(std::optional<CheckpointState> state, GetCheckpointState(dir));
  EXPECT_EQ(state->model_checkpoint_path(), dir + "/model.ckpt-5");
}

}  // namespace
}  // namespace rill
