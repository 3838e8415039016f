// Runs `rill checkpoint` (the real binary, RILL_BIN) as a user would, on
// TensorFlow's checkpoint and on checkpoints written here.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/bundle_writer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

using RunResult = testing::ProgramResult;

RunResult RunRill(std::vector<std::string> args) {
  args.insert(args.begin(), {std::getenv("RILL_BIN"), "checkpoint"});
  return testing::RunProgram(args);
}

std::string TfCheckpoint() {
  return testing::TestDataDir() + "/tf_checkpoints/regression-model/variables/variables";
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class CheckpointCommand : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A copy of TensorFlow's checkpoint that a test may damage.
  std::string CopyOfTfCheckpoint() {
    const std::string prefix = dir_ + "/copy";
    for (const char* suffix : {".index", ".data-00000-of-00001"}) {
      std::filesystem::copy_file(TfCheckpoint() + suffix, prefix + suffix);
    }
    return prefix;
  }

  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(CheckpointCommand, ListsTheCheckpointTensorFlowWrote) {
  const RunResult r = RunRill({TfCheckpoint()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "name  dtype    shape  bytes\n"
            "b     float32  [1]        4\n"
            "w     float32  [1]        4\n"
            "2 tensors, 8 bytes, 1 shard: " +
                TfCheckpoint() + "\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CheckpointCommand, PrintsOneTensor) {
  const RunResult r = RunRill({TfCheckpoint(), "--tensor", "w"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "w: float32 [1] = [-0.857862]\n");
  EXPECT_EQ(RunRill({TfCheckpoint(), "--tensor=b"}).out, "b: float32 [1] = [0]\n");
}

TEST_F(CheckpointCommand, AcceptsTheNameOfOneOfTheCheckpointsFiles) {
  const std::string listing = RunRill({TfCheckpoint()}).out;
  for (const char* suffix : {".index", ".data-00000-of-00001"}) {
    const RunResult r = RunRill({TfCheckpoint() + suffix});
    EXPECT_EQ(r.exit_code, 0) << suffix << ": " << r.err;
    EXPECT_EQ(r.out, listing) << suffix;
  }
}

TEST_F(CheckpointCommand, ReadsTheLatestCheckpointOfADirectory) {
  CopyOfTfCheckpoint();
  WriteBytes(dir_ + "/checkpoint",
             "model_checkpoint_path: \"copy\"\nall_model_checkpoint_paths: \"copy\"\n");
  const RunResult r = RunRill({dir_, "--tensor", "w"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "w: float32 [1] = [-0.857862]\n");

  const std::string empty_dir = dir_ + "/empty";
  std::filesystem::create_directory(empty_dir);
  const RunResult none = RunRill({empty_dir});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("'" + empty_dir + "' is a directory without a 'checkpoint'"));
}

// A partitioned variable is one line under its own name, with its bytes
// summed over its pieces; the pieces' internal keys are not shown.
TEST_F(CheckpointCommand, ListsAPartitionedTensorOnceWithItsSlices) {
  const std::string prefix = dir_ + "/sliced";
  const TensorShape full({4, 2});
  auto writer = io::BundleWriter::Create(prefix);
  ASSERT_OK(writer.status());
  ASSERT_OK((*writer)->AddSlice("embedding", full, TensorSlice::Parse("0,1:-").value(),
                                Tensor::FromVector<float>({1, 2}, TensorShape({1, 2}))));
  ASSERT_OK(
      (*writer)->AddSlice("embedding", full, TensorSlice::Parse("1,3:-").value(),
                          Tensor::FromVector<float>({3, 4, 5, 6, 7, 8}, TensorShape({3, 2}))));
  ASSERT_OK((*writer)->Add("global_step", Tensor::Scalar<int64_t>(1000)));
  ASSERT_OK((*writer)->Finish());

  const RunResult r = RunRill({prefix});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ContainsRegex("\nembedding    float32  \\[4,2\\]     32  partitioned in 2 "
                                   "slices: 0,1:- 1,3:-\n"));
  EXPECT_THAT(r.out, ContainsRegex("\nglobal_step  int64    \\[\\]         8\n"));
  EXPECT_THAT(r.out, HasSubstr("2 tensors, 40 bytes, 1 shard"));
  EXPECT_EQ(Lines(r.out), 4) << r.out;
  EXPECT_EQ(r.out.find('\0'), std::string::npos);

  const RunResult whole = RunRill({prefix, "--tensor", "embedding"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.out, "embedding: float32 [4,2] = [[1, 2], [3, 4], [5, 6], [7, 8]]\n");
}

TEST_F(CheckpointCommand, SummarizesALargeTensor) {
  const std::string prefix = dir_ + "/large";
  Tensor large(DT_INT32, TensorShape({10, 100}));
  for (int i = 0; i < 1000; ++i) large.data<int32_t>()[i] = i;
  auto writer = io::BundleWriter::Create(prefix);
  ASSERT_OK(writer.status());
  ASSERT_OK((*writer)->Add("counts", large));
  ASSERT_OK((*writer)->Finish());

  const RunResult r = RunRill({prefix, "--tensor", "counts"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "counts: int32 [10,100] = [0, 1, 2, 3, 4, 5, ..., 997, 998, 999] (1000 values, "
            "flattened)\n");
  EXPECT_THAT(RunRill({prefix}).out, HasSubstr("1 tensor, 4000 bytes (3.9 KiB), 1 shard"));
}

TEST_F(CheckpointCommand, MissingCheckpointNamesTheIndexFile) {
  const RunResult r = RunRill({dir_ + "/nothing"});
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/nothing.index"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CheckpointCommand, UnknownTensorIsNamed) {
  const RunResult r = RunRill({TfCheckpoint(), "--tensor", "bias"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("tensor 'bias' not found in checkpoint '" + TfCheckpoint() + "'"));
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CheckpointCommand, CorruptIndexIsAnErrorNamingIt) {
  const std::string prefix = CopyOfTfCheckpoint();
  std::string index = testing::ReadFileOrDie(prefix + ".index");
  for (const std::string& bytes :
       {std::string(), index.substr(0, index.size() / 2), std::string(index.size(), 'x')}) {
    WriteBytes(prefix + ".index", bytes);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{prefix}, std::vector<std::string>{prefix, "--tensor", "w"}}) {
      const RunResult r = RunRill(args);
      EXPECT_TRUE(r.exited);
      EXPECT_EQ(r.exit_code, 1) << bytes.size();
      EXPECT_THAT(r.err, HasSubstr(prefix + ".index")) << bytes.size();
      EXPECT_EQ(Lines(r.err), 1) << r.err;
    }
  }
}

TEST_F(CheckpointCommand, CorruptDataIsAnErrorNamingTheFileAndTensor) {
  const std::string prefix = CopyOfTfCheckpoint();
  const std::string data_path = prefix + ".data-00000-of-00001";
  std::string data = testing::ReadFileOrDie(data_path);
  data[5] ^= 0x01;  // In w, which follows b's 4 bytes.
  WriteBytes(data_path, data);
  RunResult r = RunRill({prefix, "--tensor", "w"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(data_path));
  EXPECT_THAT(r.err, HasSubstr("tensor 'w'"));
  EXPECT_THAT(r.err, HasSubstr("checksum mismatch"));
  EXPECT_EQ(RunRill({prefix, "--tensor", "b"}).exit_code, 0);

  // Listing reads only the index, but checks that the data is all there.
  WriteBytes(data_path, data.substr(0, 6));
  r = RunRill({prefix});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(data_path));
  EXPECT_THAT(r.err, HasSubstr("truncated"));
  EXPECT_EQ(r.out, "");

  std::filesystem::remove(data_path);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{prefix}, std::vector<std::string>{prefix, "--tensor", "w"}}) {
    r = RunRill(args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(data_path));
  }
}

TEST_F(CheckpointCommand, UsageErrorsExitTwo) {
  EXPECT_EQ(RunRill({}).exit_code, 2);
  EXPECT_EQ(RunRill({TfCheckpoint(), TfCheckpoint()}).exit_code, 2);
  EXPECT_EQ(RunRill({TfCheckpoint(), "--tensor"}).exit_code, 2);
  EXPECT_EQ(RunRill({TfCheckpoint(), "--bogus"}).exit_code, 2);
  const RunResult r = RunRill({TfCheckpoint(), "--tensor", "w", "--tensor", "b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("usage: rill checkpoint"));
}

TEST(RillHelp, MentionsTheCheckpointCommand) {
  const RunResult r = testing::RunProgram({std::getenv("RILL_BIN"), "help"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("checkpoint PREFIX [--tensor NAME]"));
}

}  // namespace
}  // namespace rill
