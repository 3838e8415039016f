// Saver::Save on a file system that fails: the Nth write, fsync (of a file
// or a directory), rename, open or delete; a full disk; a crash at any
// point, between the data file and the index in particular. A checkpoint
// the saver reported saved is named by the state file and restores, also
// after a crash; one it did not report saved is never taken for one.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/bundle_format.h"
#include "io/fault_injection_env.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/meta_graph.h"
#include "runtime/training/saver.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using io::FileOp;
using ::testing::Contains;
using ::testing::Not;

class SaverFaultTest : public ::testing::Test {
 protected:
  SaverFaultTest() {
    Scope scope = ops::NewRootScope();
    Variable w(scope, "w", Tensor::FromVector<float>({0.f}, TensorShape({1})));
    Variable b(scope, "b", Tensor::FromVector<float>({0.f}, TensorShape({1})));
    ops::Assign(scope.WithOpName("set_w"), w.ref(),
                ops::Placeholder(scope.WithOpName("new_w"), DT_FLOAT));
    ops::Assign(scope.WithOpName("set_b"), b.ref(),
                ops::Placeholder(scope.WithOpName("new_b"), DT_FLOAT));
    GlobalVariablesInitializer(scope);
    // One kept checkpoint: the second save deletes the first.
    def_ = Saver::Build(scope, {w, b}, {.max_to_keep = 1}).value()->saver_def();
    graph_ = scope.ToGraphDef().value();
    meta_ = MakeMetaGraph(graph_, nullptr);
    session_ = NewSession(SessionOptions(), graph_).value();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Set(float value) {
    const Tensor t = Tensor::FromVector<float>({value}, TensorShape({1}));
    ASSERT_OK(session_->Run({{"new_w", t}, {"new_b", t}}, {}, {"set_w", "set_b"}));
  }

  // A fresh directory holding checkpoint 1 (w = b = 1, saved and synced)
  // and a fresh saver that knows it; the session then holds 2.
  void SaveFirst() {
    // Names of one length: the state file's size does not change.
    dir_ = absl::StrFormat("%s/run%04d", root_, ++runs_);
    saver_ = Saver::FromSaverDef(def_);
    Set(1);
    ASSERT_OK_AND_ASSIGN(const std::string first, saver_->Save(*session_, Base(), 1, &meta_));
    ASSERT_EQ(first, Prefix(1));
    Set(2);
  }

  absl::StatusOr<std::string> SaveSecond() { return saver_->Save(*session_, Base(), 2, &meta_); }

  std::string Base() const { return dir_ + "/model.ckpt"; }
  std::string Prefix(int step) const { return Base() + "-" + std::to_string(step); }

  // What a new process finds in the directory: the state file names the
  // second checkpoint when its save returned OK, else the first, and
  // restoring the newest gives its values.
  void ExpectFound(bool second_saved) {
    const std::string expected = Prefix(second_saved ? 2 : 1);
    ASSERT_OK_AND_ASSIGN(const std::optional<CheckpointState> state, GetCheckpointState(dir_));
    ASSERT_TRUE(state.has_value());
    EXPECT_EQ(state->model_checkpoint_path(), expected);
    if (!second_saved) {
      EXPECT_THAT(state->all_model_checkpoint_paths(), Not(Contains(Prefix(2))));
    }
    EXPECT_EQ(LatestCheckpoint(dir_), expected);
    std::unique_ptr<Session> fresh = NewSession(SessionOptions(), graph_).value();
    ASSERT_OK(Saver::FromSaverDef(def_)->Restore(*fresh, expected));
    for (const char* name : {"w", "b"}) {
      ASSERT_OK_AND_ASSIGN(const std::vector<Tensor> values, fresh->Run({}, {name}, {}));
      EXPECT_EQ(values.at(0).data<float>()[0], second_saved ? 2.f : 1.f) << name;
    }
  }

  // The operations and bytes of a second save that meets no fault.
  void MeasureSecondSave(int64_t (&counts)[io::kNumFileOps], uint64_t& bytes) {
    SaveFirst();
    int64_t before[io::kNumFileOps];
    for (int op = 0; op < io::kNumFileOps; ++op) before[op] = env_.count(FileOp(op));
    const uint64_t bytes_before = env_.bytes_written();
    ASSERT_OK(SaveSecond().status());
    for (int op = 0; op < io::kNumFileOps; ++op) counts[op] = env_.count(FileOp(op)) - before[op];
    bytes = env_.bytes_written() - bytes_before;
  }

  const std::string root_ = ::rill::testing::MakeTempDir();
  // Every file the saver and its kernels touch goes through env_.
  io::FaultInjectionEnv env_{io::Env::Posix()};
  io::ScopedDefaultEnv scoped_env_{&env_};
  SaverDef def_;
  GraphDef graph_;
  MetaGraphDef meta_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Saver> saver_;
  std::string dir_;
  int runs_ = 0;
};

// Each write, fsync, rename, open and delete of the second save fails in
// turn; each time the outcome agrees with what Save returned, and a crash
// afterwards changes nothing.
TEST_F(SaverFaultTest, TheNthOperationFailingNeverPassesForASavedCheckpoint) {
  int64_t counts[io::kNumFileOps];
  uint64_t bytes = 0;
  MeasureSecondSave(counts, bytes);
  for (const FileOp op : {FileOp::kWrite, FileOp::kSync, FileOp::kSyncDir, FileOp::kRename,
                          FileOp::kOpen, FileOp::kDelete}) {
    ASSERT_GT(counts[static_cast<int>(op)], 0) << io::FileOpName(op);
    for (int64_t n = 1; n <= counts[static_cast<int>(op)]; ++n) {
      SCOPED_TRACE(::testing::Message() << io::FileOpName(op) << " #" << n << " fails");
      SaveFirst();
      env_.FailNth(op, n);
      const absl::StatusOr<std::string> saved = SaveSecond();
      ExpectFound(saved.ok());
      ASSERT_OK(env_.SimulateCrash());
      ExpectFound(saved.ok());
      // A failed delete of the retired checkpoint does not fail the save.
      if (op == FileOp::kDelete) {
        EXPECT_OK(saved.status());
      }
      if (op == FileOp::kWrite || op == FileOp::kSync || op == FileOp::kRename) {
        EXPECT_FALSE(saved.ok());
      }
    }
  }
}

TEST_F(SaverFaultTest, AFullDiskNeverPassesForASavedCheckpoint) {
  int64_t counts[io::kNumFileOps];
  uint64_t bytes = 0;
  MeasureSecondSave(counts, bytes);
  ASSERT_GT(bytes, 0u);
  std::vector<uint64_t> frees;
  for (uint64_t i = 0; i < 24; ++i) frees.push_back(bytes * i / 24);
  for (const uint64_t last : {bytes - 2, bytes - 1, bytes}) frees.push_back(last);
  for (const uint64_t free : frees) {
    SCOPED_TRACE(::testing::Message() << free << " of " << bytes << " bytes free");
    SaveFirst();
    env_.SetFreeSpace(free);
    const absl::StatusOr<std::string> saved = SaveSecond();
    EXPECT_EQ(saved.ok(), free >= bytes) << saved.status();
    if (!saved.ok()) {
      EXPECT_THAT(saved.status(), ::rill::testing::StatusIs(absl::StatusCode::kResourceExhausted,
                                                            ::testing::HasSubstr(dir_)));
    }
    ExpectFound(saved.ok());
    ASSERT_OK(env_.SimulateCrash());
    ExpectFound(saved.ok());
  }
}

// The machine stops before each operation of the second save in turn. A
// save that returned OK survives; one that did not leaves the first.
TEST_F(SaverFaultTest, ACrashAtAnyPointKeepsTheLastReportedCheckpoint) {
  int64_t counts[io::kNumFileOps];
  uint64_t bytes = 0;
  MeasureSecondSave(counts, bytes);
  int64_t ops = 0;
  for (const int64_t count : counts) ops += count;
  bool data_without_index = false;
  for (int64_t crash_at = 1; crash_at <= ops + 1; ++crash_at) {
    SCOPED_TRACE(::testing::Message() << "crash before operation " << crash_at << " of " << ops);
    SaveFirst();
    env_.CrashBeforeNthOp(crash_at);
    const absl::StatusOr<std::string> saved = SaveSecond();
    if (crash_at == ops + 1) {
      EXPECT_OK(saved.status());
    }
    ASSERT_OK(env_.SimulateCrash());
    data_without_index |= std::filesystem::exists(io::DataFilename(Prefix(2), 0, 1)) &&
                          !std::filesystem::exists(io::IndexFilename(Prefix(2)));
    ExpectFound(saved.ok());
  }
  // Among the crash points: after the data file was in place, before the
  // index was.
  EXPECT_TRUE(data_without_index);
}

}  // namespace
}  // namespace rill
